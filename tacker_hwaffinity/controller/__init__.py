"""The during-execution controller: labels follow the VMs, RequiredDuringExecution holds."""
