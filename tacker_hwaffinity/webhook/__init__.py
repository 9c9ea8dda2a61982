"""The scheduler extender and admission webhooks (``hwaffinity webhook``)."""
