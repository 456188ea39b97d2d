"""tfperf.trace: chrome traces and XPlane files into records, the top-ops table and the timeline figure.

Traces are built by hand (a chrome-trace dict, an XSpace protobuf, a StepStats protobuf), so the
tests are deterministic and never time anything.
"""

import json
import os

import matplotlib

matplotlib.use("Agg")

import pytest

from tfperf import trace

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def chrome(*events, processes=((1, f"{CPU0} Compute"), (3, "/job:localhost/replica:0/task:0/device:CPU:1 Compute"))):
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}} for pid, name in processes]
    return {"traceEvents": meta + list(events)}


def op(name, kind, *, pid=1, tid=0, ts=0, dur=10):
    return {"ph": "X", "cat": "Op", "name": kind, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {"name": name, "op": kind}}


KNOWN = chrome(
    op("dense/MatMul", "MatMul", ts=1_000_100, dur=300),
    op("preprocess", "PyFunc", tid=1, ts=1_000_000, dur=5000),
    op("dense_1/MatMul", "MatMul", pid=3, ts=1_000_150, dur=250),
    op("Relu", "Relu", ts=1_000_400, dur=40),
    {"ph": "s", "cat": "DataFlow", "name": "MatMul", "pid": 1, "tid": 0, "ts": 1_000_400, "id": 7},
    {"ph": "C", "name": "cpu", "pid": 0, "ts": 1_000_000, "args": {"bytes": 10}},
)


def test_chrome_events_keep_complete_events_in_seconds_from_the_first_one():
    events = trace.chrome_events(KNOWN)
    assert [e.name for e in events] == ["preprocess", "dense/MatMul", "dense_1/MatMul", "Relu"]
    first, second = events[0], events[1]
    assert first.op == "PyFunc" and first.device == "CPU:0 Compute" and first.thread == "1"
    assert first.start == 0.0 and first.duration == pytest.approx(5e-3) and first.end == pytest.approx(5e-3)
    assert second.start == pytest.approx(100e-6) and events[2].device == "CPU:1 Compute"


def test_chrome_events_accept_text_a_list_and_a_file(tmp_path):
    path = tmp_path / "timeline.json"
    path.write_text(json.dumps(KNOWN))
    expected = trace.chrome_events(KNOWN)
    assert trace.chrome_events(json.dumps(KNOWN)) == expected
    assert trace.chrome_events(json.dumps(KNOWN).encode()) == expected
    assert trace.chrome_events(path) == expected == trace.chrome_events(str(path))
    assert [e.name for e in trace.chrome_events(KNOWN["traceEvents"])] == [e.name for e in expected]


def test_an_event_without_args_is_named_by_its_event_name_and_an_unknown_pid_by_its_number():
    (event,) = trace.chrome_events({"traceEvents": [{"ph": "X", "name": "Conv2D", "pid": 9, "tid": 2, "ts": 5, "dur": 1}]})
    assert (event.name, event.op, event.device, event.thread) == ("Conv2D", "Conv2D", "9", "2")


@pytest.mark.parametrize("bad, message", [
    ({"events": []}, "with a 'traceEvents' list"),
    ({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}]}, "no complete"),
    ("missing-timeline.json", "no chrome trace at"),
])
def test_chrome_events_say_what_is_wrong_with_a_trace(bad, message):
    with pytest.raises(trace.TraceError, match=message):
        trace.chrome_events(bad)


def test_trace_error_is_a_value_error():
    assert issubclass(trace.TraceError, ValueError)


def test_op_table_sums_per_op_type_largest_first_with_shares():
    table = trace.op_table(trace.chrome_events(KNOWN))
    assert [(r.key, r.count) for r in table] == [("PyFunc", 1), ("MatMul", 2), ("Relu", 1)]
    assert table[1].seconds == pytest.approx(550e-6) and table.total == pytest.approx(5590e-6)
    assert sum(r.share for r in table) == pytest.approx(1.0) and table[0].share == pytest.approx(5000 / 5590)
    assert len(trace.op_table(trace.chrome_events(KNOWN), n=1)) == 1


def test_op_table_breaks_ties_by_name_and_can_group_by_node():
    events = trace.chrome_events(chrome(op("b", "Sub", dur=20), op("a1", "Add", dur=10), op("a2", "Add", ts=5, dur=10), op("c", "Const", dur=0)))
    assert [r.key for r in trace.op_table(events, n=None)] == ["Add", "Sub", "Const"]
    assert [r.key for r in trace.op_table(events, by="name")] == ["b", "a1", "a2", "c"]


@pytest.mark.parametrize("options, message", [({"by": "device"}, "by must be"), ({"n": 0}, "n must be at least 1")])
def test_op_table_rejects_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        trace.op_table(trace.chrome_events(KNOWN), **options)


def test_op_table_prints_one_line_per_row_in_milliseconds():
    text = str(trace.op_table(trace.chrome_events(KNOWN), n=2))
    lines = text.splitlines()
    assert lines[0].split() == ["op", "total", "ms", "count", "share"]
    assert lines[1].split() == ["PyFunc", "5.000", "1", "89.4%"] and lines[-1] == "(all ops: 5.590 ms)"


def test_an_empty_event_list_gives_an_empty_table():
    table = trace.op_table([])
    assert len(table) == 0 and table.total == 0


def test_plot_timeline_draws_a_lane_per_device_and_thread_with_a_legend_of_the_costliest_ops():
    ax = trace.plot_timeline(trace.chrome_events(KNOWN), highlight=2, title="step")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CPU:0 Compute / 0", "CPU:0 Compute / 1", "CPU:1 Compute / 0"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["PyFunc", "MatMul"]
    assert len(ax.collections) == 3 and ax.get_title() == "step"


def test_plot_timeline_colours_the_ops_asked_for_and_accepts_an_axes():
    import matplotlib.pyplot as plt

    _, given = plt.subplots()
    ax = trace.plot_timeline(trace.chrome_events(KNOWN), ax=given, ops=["Relu"])
    assert ax is given and [t.get_text() for t in ax.get_legend().get_texts()] == ["Relu"]
    assert trace.plot_timeline(trace.chrome_events(KNOWN), highlight=0).get_legend() is None


def _xspace(*, device_first=False):
    """A host plane (Python, two tf_Compute threads) and a GPU plane; ``device_first`` puts the GPU plane first.

    ``dense/MatMul`` ran on the GPU: the host plane holds its launch (0.5 us), the GPU plane its kernel.
    """
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()

    def add_gpu():
        gpu = space.planes.add(id=1, name="/device:GPU:0")
        gpu.event_metadata[1].id, gpu.event_metadata[1].name = 1, "volta_sgemm_kernel"
        gpu.stat_metadata[1].id, gpu.stat_metadata[1].name = 1, "tf_op"
        gpu.stat_metadata[2].id, gpu.stat_metadata[2].name = 2, "dense/MatMul:MatMul"
        stream = gpu.lines.add(id=1, name="Stream #7", timestamp_ns=1002)
        stream.events.add(metadata_id=1, offset_ps=0, duration_ps=1_000_000).stats.add(metadata_id=1, str_value="conv/Conv2D:Conv2D")
        stream.events.add(metadata_id=1, offset_ps=2_000_000, duration_ps=1_000_000).stats.add(metadata_id=1, ref_value=2)
        stream.events.add(metadata_id=1, offset_ps=4_000_000, duration_ps=1_000_000)  # a kernel without a TF op

    if device_first:
        add_gpu()
    host = space.planes.add(id=0, name="/host:CPU")
    names = {1: "step", 2: "preprocess:PyFunc", 3: "dense/MatMul:MatMul", 4: "ExecutorState::Process", 5: "EagerLocalExecute: f"}
    for key, name in names.items():
        host.event_metadata[key].id, host.event_metadata[key].name = key, name
    python = host.lines.add(id=1, name="python", timestamp_ns=1000)
    python.events.add(metadata_id=1, offset_ps=0, duration_ps=9_000_000)
    python.events.add(metadata_id=5, offset_ps=10, duration_ps=8_000_000)
    first = host.lines.add(id=2, name="tf_Compute/-8309707676955922928", timestamp_ns=1001)
    first.events.add(metadata_id=2, offset_ps=0, duration_ps=7_000_000)
    first.events.add(metadata_id=4, offset_ps=0, duration_ps=7_500_000)
    second = host.lines.add(id=3, name="tf_Compute/4069394189139351240", timestamp_ns=1000)
    second.events.add(metadata_id=3, offset_ps=8_000_000, duration_ps=500_000)  # the launch of dense/MatMul
    if not device_first:
        add_gpu()
    return space


def _write_xspace(folder, name="vm.xplane.pb", *, device_first=False):
    run = folder / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True, exist_ok=True)
    path = run / name
    path.write_bytes(_xspace(device_first=device_first).SerializeToString())
    return path


@pytest.mark.parametrize("device_first", [False, True], ids=["host_plane_first", "gpu_plane_first"])
def test_xplane_events_read_op_events_from_host_and_device_planes(tmp_path, device_first):
    events = trace.xplane_events(_write_xspace(tmp_path, device_first=device_first))
    assert [(e.name, e.op, e.device, e.thread) for e in events] == [
        ("preprocess", "PyFunc", "/host:CPU", "tf_Compute 1"),
        ("conv/Conv2D", "Conv2D", "/device:GPU:0", "Stream #7"),
        ("dense/MatMul", "MatMul", "/device:GPU:0", "Stream #7"),
    ]
    pyfunc, conv = events[0], events[1]
    # line timestamps are in ns, event offsets and durations in ps; the origin is the earliest kept event
    assert pyfunc.start == 0.0 and pyfunc.duration == pytest.approx(7e-6)
    assert conv.start == pytest.approx(1e-9, abs=1e-15) and events[2].start == pytest.approx(2.001e-6)


@pytest.mark.parametrize("device_first", [False, True], ids=["host_plane_first", "gpu_plane_first"])
def test_an_op_that_ran_on_a_gpu_is_counted_once_not_as_launch_plus_kernel(tmp_path, device_first):
    table = trace.op_table(trace.xplane_events(_write_xspace(tmp_path, device_first=device_first)), n=None)
    matmul = next(row for row in table if row.key == "MatMul")
    assert matmul.count == 1 and matmul.seconds == pytest.approx(1e-6)  # the kernel's 1 us, not + the 0.5 us launch
    assert table.total == pytest.approx(7e-6 + 1e-6 + 1e-6)


def test_host_plane_is_found_by_name_when_a_gpu_plane_comes_first():
    space = _xspace(device_first=True)
    assert space.planes[0].name == "/device:GPU:0"
    assert trace.host_plane(space).name == trace.HOST_PLANE == "/host:CPU"
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    with pytest.raises(trace.TraceError, match="no '/host:CPU' plane in this trace; it has \\['/device:GPU:0'\\]"):
        trace.host_plane(xplane_pb2.XSpace(planes=[xplane_pb2.XPlane(name="/device:GPU:0")]))


def test_xplane_events_can_keep_every_event_and_read_a_logdir(tmp_path):
    _write_xspace(tmp_path)
    everything = trace.xplane_events(tmp_path, ops_only=False)
    assert {"step", "ExecutorState::Process", "EagerLocalExecute: f", "volta_sgemm_kernel"} <= {e.op for e in everything}
    assert len(everything) == 7 and everything[0].name == "step" and everything[0].start == 0.0
    assert not [e for e in everything if e.name == "dense/MatMul" and e.device == "/host:CPU"]  # its launch: dropped


def test_find_xplane_returns_the_newest_file_and_explains_an_empty_logdir(tmp_path):
    older, newer = _write_xspace(tmp_path, "a.xplane.pb"), _write_xspace(tmp_path / "second", "b.xplane.pb")
    os.utime(older, (1, 1))
    assert trace.find_xplane(tmp_path) == newer
    with pytest.raises(trace.TraceError, match="no \\*.xplane.pb under"):
        trace.find_xplane(tmp_path / "empty")


def test_xplane_without_op_events_is_an_error(tmp_path):
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = tmp_path / "host.xplane.pb"
    path.write_bytes(xplane_pb2.XSpace(planes=[xplane_pb2.XPlane(name="/host:CPU")]).SerializeToString())
    with pytest.raises(trace.TraceError, match="holds no TensorFlow op events"):
        trace.xplane_events(path)


def test_timeline_trace_turns_run_metadata_into_a_chrome_trace():
    from tensorflow.core.framework import step_stats_pb2
    from tensorflow.core.protobuf import config_pb2

    meta = config_pb2.RunMetadata()
    device = meta.step_stats.dev_stats.add(device=f"{CPU0}")
    for name, kind, start, micros in (("preprocess", "PyFunc", 10, 700), ("dense/MatMul", "MatMul", 720, 30)):
        device.node_stats.add(node_name=name, timeline_label=f"{name} = {kind}(x)", all_start_micros=start,
                              op_start_rel_micros=0, op_end_rel_micros=micros, all_end_rel_micros=micros)
    assert isinstance(device.node_stats[0], step_stats_pb2.NodeExecStats)
    rows = trace.op_table(trace.chrome_events(trace.timeline_trace(meta)))
    assert [(r.key, r.count) for r in rows] == [("PyFunc", 1), ("MatMul", 1)]
    assert rows[0].seconds == pytest.approx(700e-6)


def test_ops_run_counts_what_tensorflow_ran_eagerly_and_in_graphs_whatever_name_called_it(tmp_path):
    import tensorflow as tf

    open_writer = tf.summary.create_file_writer  # an alias: the profiler sees the op, not the Python name
    logged = tf.function(lambda step: tf.summary.scalar("in_graph", 1.0, step=step))
    with trace.ops_run() as ran:
        first, second = open_writer(str(tmp_path / "a")), open_writer(str(tmp_path / "b"))
        with first.as_default():
            for step in range(3):
                tf.summary.scalar("eager", 1.0, step=step)
        with second.as_default():
            logged(tf.constant(0, tf.int64))
        first.close(), second.close()
    assert ran["CreateSummaryFileWriter"] == 2
    assert ran["WriteSummary"] == 4  # three eager, one inside the traced function


def test_ops_run_says_so_when_a_profiler_is_already_running(tmp_path):
    import tensorflow as tf

    tf.profiler.experimental.start(str(tmp_path))
    try:
        with pytest.raises(trace.TraceError, match="could not start"):
            with trace.ops_run():
                pass
    finally:
        tf.profiler.experimental.stop()
