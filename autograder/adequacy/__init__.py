"""How adequate the hidden suite is, measured by machine: `python -m autograder adequacy` (report.py).

mutants.py      the reference's graded code with one small change each (mutmut's operators)
adversaries.py  submissions that compute nothing, generated from the reference (the floor)
styles.py       correct submissions in students' styles, generated from the reference (must score 100)
harvest.py      the handout's calls and answers, for the adversary that looks them up
equivalent.py   the surviving mutants that change nothing promised, with why
runtime/        code written into the generated submissions (the adversary's answers, the styles' habits)
"""
