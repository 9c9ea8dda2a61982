"""Affinity annotations built to cost the node agent the most, for tests and benchmarks.

Every pattern is a glob of many stars that never matches a long pod name (so that
``MatchesAny`` tries them all), under a scope that is always true (so that every
affinity is evaluated against every container on the node)."""
from tacker_hwaffinity.numa import affinity, decode

CR = "cri-resource-manager.intel.com/"
LONG_NAME = "a" * 253           # a pod name the patterns scan to the end without a match


def _pattern(i, length):
    """A pattern of LENGTH characters: stars and 'a's, ending in a letter no name has."""
    tail = "*b%d" % i
    return ("*a" * length)[:length - len(tail)] + tail


def issue_36_annotation():
    """The annotation issue #36 timed (16.7 KB): 121 aliased affinities of 400 patterns,
    under the node cap then (100,000 values after alias expansion)."""
    patterns = ",".join("'%s'" % _pattern(i % 10, 36) for i in range(400))
    lines = ["c:", "- &a {scope: {operator: AlwaysTrue}, match: {key: pod/name, "
             "operator: MatchesAny, values: [%s]}}" % patterns]
    lines += ["- *a"] * 120
    return "\n".join(lines)


def worst_admitted_annotations():
    """{shape: annotation text}: the costliest annotations the caps admit, one per way
    of spending them (scopes always true, so every affinity meets every container):

    * ``many-values``: MAX_AFFINITIES affinities sharing MAX_VALUES star patterns;
    * ``long-patterns``: patterns of MAX_STRING characters, each a long class chunk
      the regex engine tries at every place of a long name, up to MAX_CHARS;
    * ``joint-keys``: joint keys of as many parts as MAX_CHARS allows, each part
      resolved on every container."""
    cap = affinity.MAX_CHARS
    key = "pod/name"
    per = affinity.MAX_VALUES // affinity.MAX_AFFINITIES
    short = cap // affinity.MAX_VALUES - 1 - len(key) // per
    patterns = ",".join("'%s'" % _pattern(j, short) for j in range(per))
    many = ["c:", _item(key, "&p [%s]" % patterns)]
    many += [_item(key, "*p")] * (affinity.MAX_AFFINITIES - 1)
    longest = decode.MAX_STRING
    n = (cap - len(key)) // longest
    klass = ("*" + "[a-z]" * longest)[:longest - 3] + "b*c"
    long_ = ["c:", _item(key, "[%s]" % ",".join("'%s'" % klass for _ in range(n)))]
    joint = ":,-" + ",".join(["pod/name"] * ((longest - 3) // 9))
    count = min(cap // (len(joint) + 3), affinity.MAX_AFFINITIES)
    joints = ["c:"] + [_item(joint, "['*a*']")] * count
    out = {"many-values": "\n".join(many), "long-patterns": "\n".join(long_),
           "joint-keys": "\n".join(joints)}
    for text in out.values():
        assert len(text) <= decode.MAX_TEXT, len(text)
    return out


def _item(key, values):
    return ("- {scope: {operator: AlwaysTrue}, match: {key: '%s', operator: MatchesAny, "
            "values: %s}}" % (key, values))


def pod_objects(containers, annotation, pod_object):
    """CONTAINERS bystander pods with long names, then the pod "hostile" carrying
    ANNOTATION (created last), built by tests/agent/podobjects.pod_object."""
    out = [pod_object(LONG_NAME[:-2] + "%02d" % i, cpu="100m", qos="Burstable",
                      created="2026-01-01T00:%02d:%02dZ" % divmod(i, 60))
           for i in range(containers)]
    out.append(pod_object("hostile", cpu="100m", qos="Burstable",
                          annotations={CR + "affinity": annotation},
                          created="2026-01-02T00:00:00Z"))
    return out
