"""The NRI agent's checkpoint: its grants, kept in a node-local journal so that a
restart gives every container back what it had."""
import json
import os

from tacker_hwaffinity import safewrite

CHECKPOINT = "nri-grants.json"      # the journal's file name in the agent's state directory
COMPACT_LINES = 1024                # appended lines past which a rewrite may be due


class Checkpoint:
    """The agent's record of its grants, {pod uid: {container name: entry}} (entries as
    in the annotation): a node-local file only root writes, trusted as the kubelet
    trusts ``cpu_manager_state``. A journal, so that a decision costs one short
    append, not a rewrite of every pod: each line is ``{"uid": U, "grants": G}`` (G
    null: the pod is gone) and the last line of a pod wins; ``rewrite`` compacts it
    (tmp file and rename) at every Synchronize, and whenever the lines appended since
    outnumber ``COMPACT_LINES`` and twice the pods (``stale``): so a pod resized again
    and again grows it by a bounded amount, not forever."""

    def __init__(self, path):
        self.path = path
        self._file = None
        self.appended = 0       # lines appended since the last rewrite

    def load(self, log):
        if not self.path or not os.path.exists(self.path):
            return {}
        records = {}
        try:
            with open(self.path) as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    doc = json.loads(line)
                    if not isinstance(doc, dict) or not isinstance(doc.get("uid"), str) \
                            or not isinstance(doc.get("grants"), (dict, type(None))):
                        raise ValueError("line %d: expected {uid, grants}" % n)
                    if doc["grants"] is None:
                        records.pop(doc["uid"], None)
                    else:
                        records[doc["uid"]] = doc["grants"]
        except (OSError, ValueError) as e:
            log.warning("checkpoint %s unreadable (%s): containers without a record are "
                        "placed afresh", self.path, e)
            return records
        return records

    def rewrite(self, records):
        if not self.path:
            return
        self.close()
        safewrite.replace_file(self.path, "".join(
            _line(uid, records[uid]) for uid in sorted(records)).encode("utf-8"))
        self.appended = 0

    def stale(self, pods):
        """True when the journal should be rewritten: its appended lines outnumber
        COMPACT_LINES and twice PODS (how many pods it records)."""
        return self.appended > max(COMPACT_LINES, 2 * pods)

    def record(self, uid, grants):
        """Append the grants of pod UID (None: forget the pod)."""
        if not self.path:
            return
        if self._file is None:
            self._file = safewrite.open_append(self.path)
        self._file.write(_line(uid, grants))
        self._file.flush()
        self.appended += 1

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None


def _line(uid, grants):
    return json.dumps({"uid": uid, "grants": grants}, sort_keys=True,
                      separators=(",", ":")) + "\n"
