"""Lesson 02's exercise against answers that are correct but do not build the graph once.

The article's leaky loop (new ops for every image) returns the right images, so it keeps the correctness points and
loses the structure and speed points, every time. The article's fix (a new graph and session for every image) is
finalized and flat, and keeps those points; it loses "one graph" and the race against the leaky loop. A graph built
once but never finalized loses only the finalize point. A graph built once that never feeds the contrast keeps every
structure point it got right and loses the cells that check its outputs, and the speed cells, which say why. An empty,
finalized decoy in `self.graph` while the session runs a second graph that grows with every image loses "finalized" and
"stays fixed": both read the graph of every session TensorFlow ran during the calls, through TensorFlow's own classes.
"""

import pytest

from pipeline import COURSE, assert_keeps_and_loses, class_results, scores, with_solution
from tfperf_lab.course import variants

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("02_graph_growth")
FINALIZE = "        self.graph.finalize()\n"
CALL = ("        feed = {self.image: image, self.flip: flip, self.brightness: brightness, self.contrast: contrast}\n"
        "        return self.session.run(self.output, feed)\n")
REGISTERED = {variant.name: variant for variant in variants.for_lesson(LESSON.id)}  # leaky_loop, new_graph_per_image
BUILD = (
    "        self.graph = tf.Graph()\n"
    "        with self.graph.as_default():\n")
DECOY = (  # an empty, finalized self.graph; the session runs another graph, which the calls grow
    "        self.graph = tf.Graph()\n"
    "        self.graph.finalize()\n"
    "        self.work = tf.Graph()\n"
    "        with self.work.as_default():\n")
VARIANTS = {
    "not_finalized": {FINALIZE: ""},
    "decoy_finalized_graph": {
        FINALIZE: "",  # first: the decoy below finalizes its own self.graph
        BUILD: DECOY,
        "        self.session = v1.Session(graph=self.graph)\n": "        self.session = v1.Session(graph=self.work)\n",
        CALL: ("        with self.work.as_default():\n"
               "            output = augment_ops(image, flip, brightness, contrast)  # new ops for every image\n"
               "        return self.session.run(output)\n"),
    },
    "contrast_never_fed": {
        '            self.contrast = v1.placeholder(tf.float32, [], name="contrast")\n':
            '            self.contrast = v1.placeholder_with_default(1.0, [], name="contrast")\n',
        CALL: ("        feed = {self.image: image, self.flip: flip, self.brightness: brightness}\n"
               "        return self.session.run(self.output, feed)\n"),
    },
}
CORRECT = {"augmenter_matches_leaky": 2}
EXPECTED = {
    "contrast_never_fed": {"augmenter_matches_leaky": 0, "augmenter_graph_stays_fixed": 2, "augmenter_graph_finalized": 1,
                           "augmenter_time_flat": 0, "augmenter_beats_leaky": 0},
    "leaky_loop": {"augmenter_graph_stays_fixed": 0, "augmenter_graph_finalized": 0, "augmenter_time_flat": 0, "augmenter_beats_leaky": 0},
    # "flat" times the learner's late Augmenter against a new one of theirs: a new graph per image is flat (and slow)
    "new_graph_per_image": {"augmenter_graph_stays_fixed": 0, "augmenter_graph_finalized": 1, "augmenter_time_flat": 1,
                            "augmenter_beats_leaky": 0},
    "decoy_finalized_graph": {"augmenter_graph_stays_fixed": 0, "augmenter_graph_finalized": 0, "augmenter_time_flat": 0,
                              "augmenter_beats_leaky": 0},
    "not_finalized": {"augmenter_graph_stays_fixed": 2, "augmenter_graph_finalized": 0, "augmenter_time_flat": 1,
                      "augmenter_beats_leaky": 2},
}


def class_submissions():
    notebooks = {student: with_solution(LESSON, "augmenter_solution", replace) for student, replace in VARIANTS.items()}
    return notebooks | {name: variant.notebook(LESSON) for name, variant in REGISTERED.items()}


graded = class_results(LESSON)


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_correct_but_unoptimized_answers_keep_only_the_points_they_earn(graded, student):
    result = graded[student]
    assert result.error is None, result.lines()
    got = scores(result)
    expected = {**CORRECT, **EXPECTED[student]}
    assert {cell: got[cell] for cell in expected} == expected, "\n".join(result.lines())


@pytest.mark.parametrize("student", ["leaky_loop", "new_graph_per_image"])
def test_slow_answers_are_measured_below_the_threshold(graded, student):
    (measured,) = [m for m in graded[student].measurements if m.name == "exercise_augmenter_vs_leaky"]
    assert measured.threshold and measured.ci[0] < measured.threshold and not measured.passed


def test_leaky_answer_slows_down_measurably(graded):
    (measured,) = [m for m in graded["leaky_loop"].measurements if m.name == "exercise_augmenter_late_vs_early"]
    assert measured.ci[0] < 0.5 and not measured.passed


def test_wrong_outputs_lose_the_speed_cells_with_the_reason_and_no_structure_cell(graded):
    result = graded["contrast_never_fed"]
    speed = {cell.id: cell for cell in result.cells if cell.id in ("augmenter_beats_leaky", "augmenter_time_flat")}
    assert all("outputs differ from the reference's on the same inputs" in cell.message and "not timed" in cell.message
               for cell in speed.values()), "\n".join(result.lines())
    structure = [cell for cell in result.cells if cell.id in ("augmenter_graph_stays_fixed", "augmenter_graph_finalized")]
    assert all(cell.score == cell.max_score and "grader" not in cell.message for cell in structure), "\n".join(result.lines())
    assert not result.review, result.review


def test_the_flat_check_times_the_learners_own_augmenter_against_itself(graded):
    (measured,) = [m for m in graded["new_graph_per_image"].measurements if m.name == "exercise_augmenter_late_vs_early"]
    assert measured.passed and 0.5 <= measured.ci[0] and measured.speedup < 2.0, measured


def test_a_finalized_decoy_graph_loses_finalized_and_fixed_to_the_graph_the_session_runs(graded):
    result = graded["decoy_finalized_graph"]
    assert_keeps_and_loses(result, CORRECT, EXPECTED["decoy_finalized_graph"])
    messages = {cell.id: cell.message for cell in result.cells}
    assert "the graph your session runs" in messages["augmenter_graph_stays_fixed"], "\n".join(result.lines())
    assert "the graph your session runs is not finalized" in messages["augmenter_graph_finalized"], "\n".join(result.lines())
    assert not result.review, result.review
