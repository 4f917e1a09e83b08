"""The hidden grading suite. Students never see this folder."""
