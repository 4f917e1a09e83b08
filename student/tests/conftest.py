"""Registers one marker per part, so `pytest -m part3` checks Part 3 alone."""
from student.parts import PARTS


def pytest_configure(config):
    for number, (title, _names) in PARTS.items():
        config.addinivalue_line("markers", f"part{number}: Part {number}, {title}")
