"""tfperf.events reads what tf.summary, the Keras callback and TF1 summaries wrote, every value of it.

The logs are written once per module by real TensorFlow (the point is to read what TF 2.21 writes),
so this file pays one TensorFlow import.
"""

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import tfperf
from tfperf import events

STEPS = 25  # more than the 10 tensors per tag EventAccumulator keeps by default


@pytest.fixture(scope="module")
def tf():
    tfperf.env.quiet_tensorflow()
    import tensorflow

    return tensorflow


@pytest.fixture(scope="module")
def logdir(tf, tmp_path_factory):
    """A custom-loop log (scalars every step, histograms every 5, images once) and a train/validation pair."""
    root = tmp_path_factory.mktemp("logs")
    rng = np.random.default_rng(0)
    weights = {step: rng.normal(size=(20, 5)).astype(np.float32) for step in range(0, STEPS, 5)}
    pictures = rng.random((3, 8, 6, 1)).astype(np.float32)
    writer = tf.summary.create_file_writer(str(root / "custom"))
    with writer.as_default():
        for step in range(STEPS):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
            if step in weights:
                tf.summary.histogram("weights/kernel", weights[step], step=step)
        tf.summary.image("inputs", pictures, step=0, max_outputs=3)
        tf.summary.text("note", "not a scalar, histogram or image", step=0)
    writer.close()
    for run, scale in (("train", 1.0), ("validation", 2.0)):
        run_writer = tf.summary.create_file_writer(str(root / "fit" / run))
        with run_writer.as_default():
            for epoch in range(3):
                tf.summary.scalar("epoch_loss", scale * (3 - epoch), step=epoch)
        run_writer.close()
    return {"root": root, "weights": weights, "pictures": pictures}


def test_tf2_scalars_are_tensors_and_every_step_is_read(logdir):
    from tensorboard.backend.event_processing import event_accumulator as ea

    raw = ea.EventAccumulator(str(logdir["root"] / "custom"))
    raw.Reload()
    with pytest.raises(KeyError):
        raw.Scalars("loss")
    assert len(raw.Tensors("loss")) == 10  # the default size guidance samples; events must not
    loss = events.scalars(logdir["root"] / "custom")["loss"]
    assert loss.kind == "scalars" and loss.run == "." and loss.steps == tuple(range(STEPS))
    assert loss.values == pytest.approx([1.0 / (s + 1) for s in range(STEPS)], rel=1e-6)
    assert all(isinstance(v, float) for v in loss.values) and len(loss.wall_times) == STEPS


def test_histograms_come_back_as_bucket_rows_spanning_the_weights(logdir):
    kernel = events.histograms(logdir["root"] / "custom")["weights/kernel"]
    assert kernel.steps == (0, 5, 10, 15, 20)
    for step, weights in logdir["weights"].items():
        buckets = kernel.at(step)
        assert buckets.shape == (30, 3) and buckets[:, 2].sum() == weights.size
        assert buckets[0, 0] == pytest.approx(weights.min()) and buckets[-1, 1] == pytest.approx(weights.max())


def test_images_are_decoded_to_uint8_arrays(logdir):
    inputs = events.images(logdir["root"] / "custom")["inputs"]
    (stack,) = inputs.values
    assert stack.shape == (3, 8, 6, 1) and stack.dtype == np.uint8
    np.testing.assert_allclose(stack / 255.0, logdir["pictures"], atol=1 / 255)


def test_read_keeps_only_the_three_kinds_and_filters_by_kind(logdir):
    everything = events.read(logdir["root"] / "custom")
    assert sorted(everything) == ["inputs", "loss", "weights/kernel"]  # the text summary is left out
    assert list(events.read(logdir["root"] / "custom", kind="histograms")) == ["weights/kernel"]
    assert events.tags(logdir["root"] / "custom") == {"scalars": ["loss"], "histograms": ["weights/kernel"], "images": ["inputs"]}
    with pytest.raises(ValueError, match="kind must be one of"):
        events.read(logdir["root"] / "custom", kind="scalar")


def test_runs_are_the_folders_with_event_files(logdir):
    assert events.runs(logdir["root"]) == ["custom", "fit/train", "fit/validation"]
    assert events.runs(logdir["root"] / "fit") == ["train", "validation"]
    assert events.runs(logdir["root"] / "custom") == ["."]
    validation = events.scalars(logdir["root"] / "fit", run="validation")["epoch_loss"]
    assert validation.run == "validation" and validation.values == (6.0, 4.0, 2.0)
    with pytest.raises(events.EventsError, match=r"no run 'valid'.*\['train', 'validation'\]"):
        events.read(logdir["root"] / "fit", run="valid")


def test_a_single_event_file_can_be_read(logdir):
    (path,) = events.event_files(logdir["root"] / "fit" / "train")
    assert events.runs(path) == ["."]
    assert events.scalars(path)["epoch_loss"].steps == (0, 1, 2)


def test_records_and_describe_cover_every_run_and_value(logdir):
    rows = events.records(logdir["root"] / "fit")
    assert len(rows) == 6 and {r["run"] for r in rows} == {"train", "validation"}
    assert rows[0].keys() == {"run", "kind", "tag", "step", "wall_time", "value"}
    text = events.describe(logdir["root"])
    assert "fit/validation" in text and "weights/kernel" in text and "25 values, steps 0-24" in text


def test_series_at_names_the_logged_steps_and_takes_the_last_duplicate():
    series = events.Series(".", "loss", "scalars", (0, 1, 1), (3.0, 2.0, 1.5), (0.0, 0.0, 0.0))
    assert series.at(1) == 1.5 and len(series) == 3
    assert repr(series) == "Series(./loss, scalars, 3 values, steps 0-1)"
    with pytest.raises(KeyError, match=r"no value at step 7; logged steps: \[0, 1, 1\]"):
        series.at(7)


def test_missing_or_empty_folders_say_what_to_do(tmp_path):
    with pytest.raises(events.EventsError, match="does not exist"):
        events.runs(tmp_path / "nowhere")
    with pytest.raises(events.EventsError, match=r"no TensorBoard event files .*writer\.flush\(\) or writer\.close\(\)"):
        events.scalars(tmp_path)
    assert events.event_files(tmp_path) == []


def test_tf1_summaries_are_read_too(tf, tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        values = tf.compat.v1.placeholder(tf.float32, [None])
        merged = tf.compat.v1.summary.merge([tf.compat.v1.summary.scalar("average", tf.reduce_mean(values)),
                                             tf.compat.v1.summary.histogram("spread", values)])
        file_writer = tf.compat.v1.summary.FileWriter(str(tmp_path))
        with tf.compat.v1.Session(graph=graph) as sess:
            for step in range(3):
                file_writer.add_summary(sess.run(merged, {values: np.arange(10.0) * (step + 1)}), step)
        file_writer.close()
    logged = events.read(tmp_path)
    assert logged["average"].kind == "scalars" and logged["average"].values == (4.5, 9.0, 13.5)
    spread = logged["spread"].at(2)
    assert spread[:, 2].sum() == 10 and spread[0, 0] == 0.0 and spread[-1, 1] == pytest.approx(27.0)


def test_importing_events_imports_neither_tensorflow_nor_tensorboard():
    code = "import sys, tfperf.events; print('tensorflow' in sys.modules, 'tensorboard' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == ["False", "False"]


def test_logged_plots_draw_one_line_per_series_or_step(logdir):
    custom = events.read(logdir["root"] / "custom")
    ax = tfperf.plots.logged_scalars({"loss": custom["loss"], "again": custom["loss"]}, ylabel="loss")
    assert len(ax.lines) == 2 and ax.get_ylabel() == "loss"
    ax2 = tfperf.plots.logged_histograms(custom["weights/kernel"])
    assert len(ax2.lines) == 5 and ax2.get_title() == "weights/kernel"
    ax3 = tfperf.plots.logged_images(custom["inputs"].at(0), title="inputs")
    assert ax3.images[0].get_array().shape == (8, 18)


def test_summaries_written_counts_every_value_of_every_kind_in_every_run(logdir):
    # custom: 25 scalars, 5 histograms, one image summary, one text; fit: 3 scalars in each of two runs
    assert events.summaries_written(logdir["root"] / "custom") == STEPS + 5 + 1 + 1
    assert events.summaries_written(logdir["root"]) == STEPS + 5 + 1 + 1 + 6
