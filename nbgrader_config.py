"""nbgrader configuration for a course graded by agentloop-autograder: copy it to the course root.

`nbgrader autograde` still runs each submission in a kernel, but only to fill in outputs for
feedback. Every automatic grade cell (grade_id == a part in grading_tests/<assignment>/assignment.toml)
gets the score `autograder grade` gives the student's submitted folder, written in place of whatever
the kernel printed or raised. Written answers stay manually graded.
"""

from autograder import nbgrader_course

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "agentloop"

# nbgrader's own list with two swaps: KernelRun (a dead kernel ends the run, not the autograde)
# instead of Execute, and TrustedGrades right before SaveAutoGrades records the scores.
c.Autograde.autograde_preprocessors = nbgrader_course.autograde_preprocessors()

# A grade cell the student deleted comes back, so TrustedGrades can score it.
c.OverwriteCells.add_missing_cells = True
