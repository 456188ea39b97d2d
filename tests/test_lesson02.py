"""Lesson 02's exercise against answers that are correct but do not build the graph once.

The article's leaky loop (new ops for every image) and the article's fix (a new graph and session for
every image) return the right images, so they keep the correctness points; they lose the structure
and speed points, every time. A graph built once but never finalized loses only the finalize point.
"""

import pytest

from pipeline import COURSE, grade_submissions, scores, with_solution

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("02_graph_growth")
FINALIZE = "        self.graph.finalize()\n"
CALL = ("        feed = {self.image: image, self.flip: flip, self.brightness: brightness, self.contrast: contrast}\n"
        "        return self.session.run(self.output, feed)\n")
VARIANTS = {
    "leaky_loop": {
        FINALIZE: "",
        CALL: ("        with self.graph.as_default():\n"
               "            output = augment_ops(image, flip, brightness, contrast)\n"
               "        return self.session.run(output)\n"),
    },
    "new_graph_per_image": {
        CALL: ("        self.graph = tf.Graph()\n"
               "        with self.graph.as_default():\n"
               "            output = augment_ops(image, flip, brightness, contrast)\n"
               "        self.graph.finalize()\n"
               "        with v1.Session(graph=self.graph) as self.session:\n"
               "            return self.session.run(output)\n"),
    },
    "not_finalized": {FINALIZE: ""},
}
CORRECT = {"augmenter_matches_leaky": 2}
EXPECTED = {
    "leaky_loop": {"augmenter_graph_stays_fixed": 0, "augmenter_graph_finalized": 0, "augmenter_time_flat": 0, "augmenter_beats_leaky": 0},
    # graded, "flat" is timed against a new reference Augmenter, and finalized is backed by the speed verdicts: a new
    # graph per image is flat but slow, so it loses both
    "new_graph_per_image": {"augmenter_graph_stays_fixed": 0, "augmenter_graph_finalized": 0, "augmenter_time_flat": 0,
                            "augmenter_beats_leaky": 0},
    "not_finalized": {"augmenter_graph_stays_fixed": 2, "augmenter_graph_finalized": 0, "augmenter_time_flat": 1,
                      "augmenter_beats_leaky": 2},
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_submissions(tmp_path_factory, LESSON, {student: with_solution(LESSON, "augmenter_solution", replace) for student, replace in VARIANTS.items()})


@pytest.mark.parametrize("student", sorted(VARIANTS))
def test_correct_but_unoptimized_answers_keep_only_the_points_they_earn(graded, student):
    result = graded[student]
    assert result.error is None, result.lines()
    got = scores(result)
    expected = {**CORRECT, **EXPECTED[student]}
    assert {cell: got[cell] for cell in expected} == expected, "\n".join(result.lines())


@pytest.mark.parametrize("student", ["leaky_loop", "new_graph_per_image"])
def test_slow_answers_are_measured_below_the_threshold(graded, student):
    (measured,) = [m for m in graded[student].measurements if m.name == "exercise_augmenter_vs_leaky"]
    assert measured.ci[0] < 15.0 and not measured.passed


def test_leaky_answer_slows_down_measurably(graded):
    (measured,) = [m for m in graded["leaky_loop"].measurements if m.name == "exercise_augmenter_late_vs_early"]
    assert measured.ci[0] < 0.5 and not measured.passed
