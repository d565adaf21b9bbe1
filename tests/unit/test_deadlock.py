"""engine/deadlock.py's wait-for graph, from made-up threads and the lock refs locks.c would read:
who waits (in futex on a lock's word, the lock in its innermost frame), who holds (an RLock's
owner, else the strongest evidence of one thread's frames), cycles, and the one line it says,
including the holders it cannot name."""

from heatline.engine import deadlock
from heatline.engine.dump import Frame, Thread


def _lock(address, *, frame=0, place="exit", kind="_thread.lock", owner=0, count=0):
    return {"lock": address, "sem": address + 1, "owner": owner, "count": count, "kind": kind,
            "locked": True, "frame": frame, "place": place}


def _thread(tid, name, line, locks, waits_on=None):
    """A Python thread named name, at app.py:line; waiting in futex on the lock waits_on's word
    when given (else asleep in clock_nanosleep)."""
    return Thread(native_id=tid, name=name, python=True, thread_id=tid * 100, kernel_state="S",
                  syscall="futex" if waits_on else "clock_nanosleep",
                  futex=waits_on + 1 if waits_on else None, locks=locks,
                  frames=[Frame("/srv/app.py", "run", f"{name}_run", line),
                          Frame("/usr/lib/python3/threading.py", "run", "Thread.run", 900)])


def test_a_three_thread_cycle_with_holders_from_with_blocks():
    a = _thread(1, "a", 10, [_lock(0xA0), _lock(0xB0, place="stack")], waits_on=0xB0)
    b = _thread(2, "b", 20, [_lock(0xB0), _lock(0xC0, place="stack")], waits_on=0xC0)
    c = _thread(3, "c", 30, [_lock(0xC0), _lock(0xA0, place="stack")], waits_on=0xA0)
    found = deadlock.find([a, b, c])
    assert found is not None and found.cycle
    assert [w.thread.name for w in found.waits] == ["a", "b", "c"]
    assert deadlock.text(found, "python3") == (
        "deadlock: a waits at app.py:10 for lock 0xb0 held by b (in a with block of b_run(), at "
        "app.py:20), which waits at app.py:20 for lock 0xc0 held by c (in a with block of "
        "c_run(), at app.py:30), which waits at app.py:30 for lock 0xa0 held by a (in a with "
        "block of a_run(), at app.py:10)")


def test_an_rlock_names_its_owner_and_a_waiter_behind_the_cycle_is_listed():
    a = _thread(1, "a", 10, [_lock(0xB0, kind="_thread.RLock", owner=200, count=1)],
                waits_on=0xB0)
    b = _thread(2, "b", 20, [_lock(0xA0, kind="_thread.RLock", owner=100, count=2)],
                waits_on=0xA0)
    main = _thread(3, "python3", 5, [_lock(0xA0, kind="_thread.RLock", owner=100, count=2)],
                   waits_on=0xA0)
    main.main = True
    found = deadlock.find([main, a, b])
    assert found.cycle and {w.thread.name for w in found.waits} == {"a", "b"}
    assert [(w.holder.name, w.held_by) for w in found.waits] == [("b", "owner"), ("a", "owner")]
    line = deadlock.text(found, "python3")
    assert line.startswith("deadlock: a waits at app.py:10 for RLock 0xb0 held by b, which waits")
    assert line.endswith("; behind them: main thread waits at app.py:5 for RLock 0xa0 held by a")


def test_a_wait_on_a_sleeping_holder_or_on_oneself_is_no_deadlock():
    # queue.get: the consumer waits on the Condition's waiter lock, which only it holds (a
    # local of its frame), while the producer sleeps.
    consumer = _thread(1, "consumer", 10, [_lock(0xD0, place="local")], waits_on=0xD0)
    producer = _thread(2, "producer", 20, [])
    assert deadlock.find([consumer, producer]) is None
    keeper = _thread(3, "keeper", 30, [_lock(0xA0)])
    waiter = _thread(4, "waiter", 40, [_lock(0xA0, place="stack")], waits_on=0xA0)
    assert deadlock.find([keeper, waiter]) is None


def test_holders_it_cannot_tell_apart_are_said_so_when_every_thread_waits():
    # a and c show 0xA0 only on their innermost value stacks (maybe leftovers): no holder is
    # named, no cycle closes, but every Python thread waits for a lock.
    a = _thread(1, "a", 10, [_lock(0xA0, place="stack"), _lock(0xB0, place="stack")],
                waits_on=0xB0)
    b = _thread(2, "b", 20, [_lock(0xB0), _lock(0xA0, place="stack")], waits_on=0xA0)
    c = _thread(3, "c", 30, [_lock(0xA0, place="stack")], waits_on=0xE0)
    c.locks.append(_lock(0xE0, place="stack"))
    found = deadlock.find([a, b, c])
    assert found is not None and not found.cycle
    line = deadlock.text(found, "python3")
    assert line.startswith("deadlock: every thread waits, none can go on: a waits at app.py:10 for "
                           "lock 0xb0 held by b (in a with block of b_run(), at app.py:20); "
                           "b waits at app.py:20 for lock 0xa0 held by a thread heatline cannot "
                           "name"), line
    # A thread in I/O meanwhile may still release them: nothing is said.
    reader = _thread(5, "reader", 50, [])
    reader.syscall = "recvfrom"
    assert deadlock.find([a, b, c, reader]) is None


def test_threads_not_asleep_or_holding_the_gil_wait_for_nothing():
    a = _thread(1, "a", 10, [_lock(0xA0), _lock(0xB0, place="stack")], waits_on=0xB0)
    b = _thread(2, "b", 20, [_lock(0xB0), _lock(0xA0, place="stack")], waits_on=0xA0)
    assert deadlock.find([a, b]).cycle
    b.kernel_state = "R"
    assert deadlock.find([a, b]) is None
    b.kernel_state, b.holds_gil = "S", True
    assert deadlock.find([a, b]) is None


def test_the_name_of_a_thread():
    thread = Thread(native_id=7, name="python3")
    assert deadlock.thread_name(thread, "python3") == "thread 7"
    thread.main = True
    assert deadlock.thread_name(thread, "python3") == "main thread"
    thread.name = "loader"
    assert deadlock.thread_name(thread, "python3") == "loader"
    thread.python_name = "Loader-1"  # threading's name comes before the kernel's
    assert deadlock.thread_name(thread, "python3") == "Loader-1"


def test_a_lock_on_the_innermost_value_stack_names_no_holder():
    # The innermost frame's value stack is read to co_stacksize: a lock there may be a leftover.
    a = _thread(1, "a", 10, [_lock(0xA0), _lock(0xB0, place="stack")], waits_on=0xB0)
    b = _thread(2, "b", 20, [_lock(0xB0, place="stack"), _lock(0xA0, place="stack")],
                waits_on=0xA0)
    found = deadlock.find([a, b])
    assert not found.cycle and [w.holder for w in found.waits] == [None, a]
    b.locks[0]["frame"] = 1  # an outer frame's live stack: b holds it
    assert deadlock.find([a, b]).cycle


def test_a_condition_wait_is_a_wait_for_a_notify():
    # a holds `table` (a with block) and waits in Condition.wait (on its own waiter lock, a
    # local of threading.py's wait); b, which would notify, waits for `table`.
    a = _thread(1, "a", 10, [_lock(0xA0, frame=1), _lock(0xC0, place="local")], waits_on=0xC0)
    a.frames.insert(0, Frame("/usr/lib/python3/threading.py", "wait", "Condition.wait", 320))
    b = _thread(2, "b", 20, [_lock(0xA0, place="stack")], waits_on=0xA0)
    found = deadlock.find([a, b])
    assert found is not None and not found.cycle
    assert deadlock.text(found, "python3") == (
        "deadlock: every thread waits, none can go on: a waits at app.py:10 for a notify (in a "
        "Condition's wait); b waits at app.py:20 for lock 0xa0 held by a (in a with block of "
        "a_run(), at app.py:10)")
