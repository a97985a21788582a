"""dump --async against tasks.py, an asyncio service at rest whose truth file names each
task, the tasks awaiting it and the line its own coroutine waits on.

On every version (3.14+ read the layout the interpreter publishes, 3.11-3.13 asyncio's
own sets of tasks, found from the event loop's frame) every task must be in the tree
once per awaiter, under the task that awaits it (a gather's children under the
gatherer, an awaited task under its waiter, a TaskGroup's tasks under the task that
opened the group), pending, with its coroutine at its own await line, under the thread
that runs its loop; the task that finished and was replaced is gone; with the main task
burning CPU, it is the one running.
"""

import re
import time

import pytest

from lib.paths import TRUTH_TIMEOUT
from lib.interpreters import make_interp
from lib.harness import Harness, Once, seize_by_another_tracer

QUICK = 60
TASK = re.compile(r"^( *)Task '(.*)' \(([^)]*)\)")
FRAME = re.compile(r'^ *File "(.*)", line (\d+|\?), in (.*)$')
VERSIONS = ("3.11", "3.12", "3.13", "3.14", "3.15")


def parse_tree(text):
    """{name: [(parent or None, state, [(file, line, qualname)...])...]}, one entry
    per place the task appears."""
    assert "\nasyncio: " in text, text
    tasks, stack = {}, []
    for line in text.split("\nasyncio: ", 1)[1].splitlines():
        m = TASK.match(line)
        if m:
            depth = (len(m[1]) - 2) // 4
            del stack[depth:]
            parent = stack[-1] if stack else None
            entry = (parent, m[3], [])
            tasks.setdefault(m[2], []).append(entry)
            stack.append(m[2])
            current = entry
            continue
        m = FRAME.match(line)
        if m and stack:
            current[2].append((m[1], int(m[2]) if m[2] != "?" else None, m[3]))
    return tasks


EPOLL_WAITS = {"232", "281", "441"}   # epoll_wait, epoll_pwait, epoll_pwait2 (x86-64)


def wait_in_event_loop(pid):
    """Until the main thread waits in epoll: its loop has run every ready task."""
    deadline = time.monotonic() + TRUTH_TIMEOUT
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/syscall") as f:
                if f.read().split()[0] in EPOLL_WAITS:
                    return
        except (OSError, IndexError):
            pytest.fail(f"process {pid} exited before its event loop waited")
        time.sleep(0.02)
    pytest.fail(f"process {pid} did not wait in its event loop within {TRUTH_TIMEOUT} s")


def dump_tasks(tmpdir, profiler, interp, hog):
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, "tasks", *(["--hog"] if hog else []), seconds=300)
        if not hog:
            wait_in_event_loop(w.pid)
        run = h.run_profiler(["dump", "-p", w.pid, "--async"], timeout=QUICK)
        # The main task turns to its burn just after the truth is written.
        for _ in range(20):
            if not hog or run.rc != 0 or "Task 'main' (running)" in run.stdout:
                break
            run = h.run_profiler(["dump", "-p", w.pid, "--async"], timeout=QUICK)
        if w.proc.poll() is not None:
            pytest.fail(f"tasks.py died while dumped:\n{w.output()}")
    finally:
        h.close()
    return w.truth, run


@pytest.fixture(scope="module", params=[False, True], ids=["at-rest", "hog"])
def dumped(request, py, module_tmp, profiler_bin):
    return Once(lambda: dump_tasks(module_tmp / f"{py.id}-{request.param}", profiler_bin, py,
                                   request.param))


def test_dump_async_tree_matches_truth(py, dumped):
    truth, run = dumped.get()
    assert run.rc == 0, run.describe()
    assert re.search(r"^Thread \d+: \d+ asyncio tasks?$", run.stdout, re.M), run.stdout
    tree = parse_tree(run.stdout)
    script = truth["script"]
    bad = []
    for name, want in truth["tasks"].items():
        seen = tree.get(name, [])
        parents = sorted(p for p, _, _ in seen if p is not None)
        if parents != sorted(want["awaited_by"]) or (not want["awaited_by"] and len(seen) != 1):
            bad.append(f"{name}: under {[p for p, _, _ in seen]}, "
                       f"want under {want['awaited_by'] or 'nothing'}")
        for _, state, frames in seen:
            expect = "running" if name == "main" and truth["hog"] else "pending"
            if state != expect:
                bad.append(f"{name}: {state}, want {expect}")
            if want["line"] is not None and (script, want["line"]) not in \
                    [(f, ln) for f, ln, _ in frames]:
                bad.append(f"{name}: frames {frames}, want {script}:{want['line']}")
    for name in truth["gone"]:
        if name in tree:
            bad.append(f"{name} finished and was replaced, yet it is in the tree")
    extra = set(tree) - set(truth["tasks"])
    if extra:
        bad.append(f"tasks the workload never made: {sorted(extra)}")
    assert not bad, "\n".join(bad) + "\n" + run.stdout


def test_dump_async_running_task_is_the_threads(py, dumped):
    """The running task's chain ends at the coroutine that runs; the thread's stack
    above the tree shows the burn under it."""
    truth, run = dumped.get()
    assert run.rc == 0, run.describe()
    if not truth["hog"]:
        assert "(running)" not in run.stdout, run.stdout
        return
    main = parse_tree(run.stdout)["main"]
    assert len(main) == 1 and main[0][1] == "running", run.stdout
    frames = main[0][2]
    assert frames and frames[0][2] == "main", run.stdout
    stacks = run.stdout.split("\nasyncio: ", 1)[0]
    # The burn's line, or the test of the loop around it just above.
    hog = re.compile(r'File "%s", line (\d+), in hog$' % re.escape(truth["script"]), re.M)
    lines = [int(m[1]) for m in hog.finditer(stacks)]
    assert len(lines) == 1 and truth["lines"]["hog"] - lines[0] in (0, 1), run.stdout



@pytest.mark.parametrize("version", VERSIONS)
def test_dump_async_stacks_and_tree_describe_one_moment(version, sid_root, workloads_installed,
                                                          tmp_path, profiler_bin):
    """The main task runs on two lines of its own in turn, a few hundred microseconds
    each: in every dump, the line the thread's stack shows it on is the line its task
    in the tree shows, and no coroutine frame is unreadable (the process is held while
    both are read)."""
    interp = make_interp(version, sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(interp, "tasks", "--flip", seconds=300)
        # The loop's own line (its test) lies just above the two.
        flips = range(w.truth["lines"]["flip_a"] - 1, w.truth["lines"]["flip_b"] + 1)
        main = re.compile(r'File "%s", line (\d+), in main$' % re.escape(w.truth["script"]))
        for _ in range(8):
            run = h.run_profiler(["dump", "-p", w.pid, "--async"], timeout=QUICK)
            assert run.rc == 0, run.describe()
            assert "[incomplete" not in run.stdout, run.stdout
            stacks = run.stdout.split("\nasyncio: ", 1)[0]
            on_stack = [int(m[1]) for m in map(main.search, stacks.splitlines()) if m]
            task = parse_tree(run.stdout)["main"]
            assert len(on_stack) == 1 and on_stack[0] in flips, run.stdout
            assert len(task) == 1 and task[0][1] == "running", run.stdout
            assert task[0][2][0][1] == on_stack[0], \
                f"stack at line {on_stack[0]}, task at {task[0][2][0][1]}\n{run.stdout}"
        assert w.proc.poll() is None, f"tasks.py died while dumped:\n{w.output()}"
    finally:
        h.close()


HEADING = re.compile(r"^(?:Thread (\d+): \d+ asyncio tasks?|(Tasks of [^:]*): \d+)$")


def task_places(text):
    """{name of a task that no task awaits: the thread id it is listed under, or the
    text of the heading that names no thread}."""
    places, here = {}, None
    for line in text.split("\nasyncio: ", 1)[1].splitlines():
        m = HEADING.match(line)
        if m:
            here = int(m[1]) if m[1] else m[2]
            continue
        m = TASK.match(line)
        if m and len(m[1]) == 2:
            places[m[2]] = here
    return places


@pytest.mark.parametrize("version", VERSIONS)
def test_dump_async_lists_each_task_under_the_thread_of_its_loop(version, sid_root,
                                                                 workloads_installed,
                                                                 tmp_path, profiler_bin):
    """Two threads run a loop each, and a third loop runs nowhere: each running loop's
    tasks are under the thread that runs it. The loop no thread runs has its task with
    the thread that made it on 3.14+ (which list tasks so) and under 'Tasks of no
    running event loop' on 3.11-3.13 (which list them by loop)."""
    interp = make_interp(version, sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(interp, "tasks", "--threads", seconds=300)
        wait_in_event_loop(w.pid)
        run = h.run_profiler(["dump", "-p", w.pid, "--async"], timeout=QUICK)
        assert run.rc == 0, run.describe()
        places = task_places(run.stdout)
        want = {"main": w.pid, "parent": w.pid, "group": w.pid,
                "other-loop-main": w.truth["threads"]["other-loop-main"],
                "idle-loop": w.pid if interp.version >= "3.14" else
                "Tasks of no running event loop"}
        got = {name: places.get(name) for name in want}
        assert got == want, run.stdout
    finally:
        h.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_dump_async_with_no_loop_running(version, sid_root, workloads_installed, tmp_path,
                                         profiler_bin):
    """asyncio imported, a task parked on a loop that never runs, and no loop running:
    3.14+ list it with the thread that made it; 3.11-3.13, which find tasks through a
    running loop's frame, say that none runs. Either way the dump succeeds, quietly."""
    interp = make_interp(version, sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(interp, "tasks", "--no-loop", seconds=300)
        run = h.run_profiler(["dump", "-p", w.pid, "--async"], timeout=QUICK)
        assert run.rc == 0 and not run.stderr.strip(), run.describe()
        if interp.version >= "3.14":
            assert set(task_places(run.stdout)) == {"parked"}, run.stdout
        else:
            assert "\nasyncio: no thread runs an event loop: no tasks\n" in run.stdout, \
                run.stdout
    finally:
        h.close()


def test_dump_async_of_a_traced_process_says_its_parts_may_differ(sid_root, workloads_installed,
                                                                  tmp_path, profiler_bin):
    """Another tracer holds the process: it cannot be held, so the dump is read while it
    runs, and one line says that its parts may describe different moments."""
    interp = make_interp("3.14", sid_root)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.start_workload(interp, "tasks", seconds=300)
        wait_in_event_loop(w.pid)
        tracer = seize_by_another_tracer(h, w.pid)
        run = h.run_profiler(["dump", "-p", w.pid, "--async"], timeout=QUICK)
        assert run.rc == 0, run.describe()
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and f"process {tracer.pid} traces it" in lines[0] and \
            "different moments" in lines[0], run.describe()
        assert set(parse_tree(run.stdout)) >= set(w.truth["tasks"]), run.stdout
    finally:
        h.close()
