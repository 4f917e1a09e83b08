"""The course's policies, each a pure decision from times, scores and the course's settings (assignment/spec.py):

    late.py      what lateness costs (the gradebook's grade column; the Gradescope runtime with late_on_gradescope)
    budget.py    how many submissions count in a window (the Gradescope runtime, from previous_submissions)

No file, clock or process here: the callers read the times and apply the decision.
"""
