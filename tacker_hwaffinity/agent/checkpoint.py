"""The NRI agent's checkpoint: its grants, kept in a node-local journal so that a
restart gives every container back what it had."""
import json
import os

CHECKPOINT = "nri-grants.json"      # the journal's file name in the agent's state directory


class Checkpoint:
    """The agent's record of its grants, {pod uid: {container name: entry}} (entries as
    in the annotation): a node-local file only root writes, trusted as the kubelet
    trusts ``cpu_manager_state``. A journal, so that a decision costs one short
    append, not a rewrite of every pod: each line is ``{"uid": U, "grants": G}`` (G
    null: the pod is gone) and the last line of a pod wins; ``rewrite`` compacts it
    (tmp file and rename) at every Synchronize."""

    def __init__(self, path):
        self.path = path
        self._file = None

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
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            for uid in sorted(records):
                f.write(_line(uid, records[uid]))
        os.replace(tmp, self.path)

    def record(self, uid, grants):
        """Append the grants of pod UID (None: forget the pod)."""
        if not self.path:
            return
        if self._file is None:
            self._file = open(self.path, "a")
        self._file.write(_line(uid, grants))
        self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None


def _line(uid, grants):
    return json.dumps({"uid": uid, "grants": grants}, sort_keys=True,
                      separators=(",", ":")) + "\n"
