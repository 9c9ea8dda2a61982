"""The random lifecycle's judgement (``windows.py``): which violations lie inside a
documented window, the event kind each counts under, and the table the README quotes."""
from hypothesis import given, settings, strategies as st

from . import windows as w

SHORT = w.SHORT


def test_only_a_colocating_migration_and_a_controller_restart_have_windows():
    assert {k for k in w.KINDS if w.window(k, w.SHIPPED)} == {
        w.MIGRATE_OCCUPIED, w.RESTART_CONTROLLER}
    # the shipped timings: poll 30 + two evictions 20 + slack 15; anti-affinity is
    # evicted at once, the grace is affinity's only
    assert w.window(w.MIGRATE_OCCUPIED, w.SHIPPED) == 65
    assert w.window(w.RESTART_CONTROLLER, w.SHIPPED) == 55
    assert w.window(w.MIGRATE_OCCUPIED, w.SHORT) == 24
    assert w.SHIPPED.flags() == ["--poll-interval", "30", "--grace", "60",
                                 "--eviction-interval", "10"]


def test_the_checker_may_go_no_longer_than_the_shortest_window_between_samples():
    assert w.longest_gap_bound(w.SHORT) == 24       # the migration's; the restart's is 39
    assert w.longest_gap_bound(w.SHIPPED) == 55     # the restart's; the migration's is 65


def test_a_violation_after_a_windowless_event_is_outside_and_names_it():
    events = [w.Event(w.SCALE_OUT_CNF, 10, 20)]
    (j,) = w.judge(events, [w.Violation("upf", "c1", 15, 16)], SHORT, now=100)
    assert (j.inside, j.kind) == (False, w.SCALE_OUT_CNF)
    assert "outside every window (during or after VNF-B scale-out)" in j.why


def test_a_violation_inside_a_colocating_migration_counts_under_it_until_its_end():
    events = [w.Event(w.MIGRATE_OCCUPIED, 0, 2), w.Event(w.SCALE_OUT_CNF, 5, 9)]
    end = 2 + w.window(w.MIGRATE_OCCUPIED, SHORT)
    ok, late = w.judge(events, [w.Violation("upf", "c1", 6, end),
                                w.Violation("upf", "c2", 6, end + 1)], SHORT, now=100)
    assert (ok.inside, ok.kind, ok.seconds) == (True, w.MIGRATE_OCCUPIED, end - 6)
    assert (late.inside, late.kind) == (False, w.MIGRATE_OCCUPIED)
    assert "past its window" in late.why


def test_an_open_violation_is_judged_up_to_now():
    events = [w.Event(w.MIGRATE_OCCUPIED, 0, 2)]
    v = w.Violation("upf", "c1", 3)
    assert w.judge(events, [v], SHORT, now=20)[0].inside
    assert not w.judge(events, [v], SHORT, now=1000)[0].inside


def test_a_restart_inside_a_migrations_window_extends_it():
    window = w.window(w.MIGRATE_OCCUPIED, SHORT)
    events = [w.Event(w.MIGRATE_OCCUPIED, 0, 1), w.Event(w.RESTART_CONTROLLER, window, window + 2)]
    end = window + 2 + w.window(w.RESTART_CONTROLLER, SHORT)
    (j,) = w.judge(events, [w.Violation("upf", "c1", 2, end)], SHORT, now=end)
    assert (j.inside, j.kind) == (True, w.MIGRATE_OCCUPIED)


def test_a_held_colocation_must_begin_in_a_window_and_be_alerted_in_time():
    events = [w.Event(w.MIGRATE_OCCUPIED, 0, 1)]
    bound = w.alert_bound(SHORT)
    held = [w.Violation("udr", "c1", 2, 1000, held=True, alerted=2 + bound),   # ok
            w.Violation("udr", "c2", 2, 1000, held=True, alerted=3 + bound),   # late
            w.Violation("udr", "c3", 2, 1 + bound, held=True),                 # short
            w.Violation("udr", "c4", 2, 3 + bound, held=True)]                 # never
    assert [j.why.split(" ")[0] or "ok" for j in w.judge(events, held, SHORT, 2000)] == [
        "ok", "alerted", "ok", "lasted"]
    (outside,) = w.judge([], [w.Violation("udr", "c1", 5, held=True, alerted=6)], SHORT, 9)
    assert not outside.inside and outside.kind is None


def test_the_table_counts_every_kind_and_every_violation():
    events = [w.Event(w.MIGRATE_OCCUPIED, 0, 1), w.Event(w.HEAL_POD, 200, 210)]
    judged = w.judge(events, [w.Violation("upf", "c1", 2, 20),
                              w.Violation("udr", "c1", 2, 500, held=True, alerted=8),
                              w.Violation("upf", "c2", 205, 206)], SHORT, 600)
    rows = w.table(events, judged)
    assert list(rows) == list(w.KINDS)
    occupied, heal = rows[w.MIGRATE_OCCUPIED], rows[w.HEAL_POD]
    assert (occupied.events, occupied.evicted, occupied.held, occupied.outside,
            occupied.longest, occupied.longest_alert) == (1, 1, 1, 0, 18, 6)
    assert (heal.events, heal.outside) == (1, 1)
    text = w.markdown(rows, SHORT)
    assert text.startswith(w.HEADER)
    assert "| live migration onto a worker's host (window 24 s) | 1 | 1 | 0 | 18 | 1 | 6 |" \
        in text
    assert "| pod heal (window none) | 1 | 0 | 1 | - | 0 | - |" in text


# -- against a plain oracle ------------------------------------------------------------

def _covered(t, events, timings):
    return any(e.start <= t <= e.end + w.window(e.kind, timings) for e in events
               if w.window(e.kind, timings))


def _event(draw_kind, start, length):
    return w.Event(draw_kind, start, start + length)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.builds(_event, st.sampled_from(w.KINDS), st.integers(0, 300),
                          st.integers(0, 40)), max_size=8),
       st.lists(st.tuples(st.integers(0, 400), st.integers(0, 200)), min_size=1,
                max_size=6))
def test_an_evicted_workloads_violation_is_inside_exactly_when_every_moment_is_covered(
        events, spans):
    """With whole-second times, every moment of [start, end] is covered when every
    half second is: the judgement agrees with that oracle, and the kind a violation
    counts under opened the window it is in."""
    violations = [w.Violation("upf", "h%d" % i, s, s + n) for i, (s, n) in enumerate(spans)]
    for j in w.judge(events, violations, SHORT, now=10 ** 6):
        v = j.violation
        covered = all(_covered(v.start + k / 2, events, SHORT)
                      for k in range(int(2 * (v.end - v.start)) + 1))
        assert j.inside == covered, (events, v, j.why)
        if j.inside:
            assert w.window(j.kind, SHORT) > 0
        assert j.seconds == v.end - v.start
