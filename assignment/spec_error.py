"""The spec's one error, in a module of its own: assignment.spec reads the declaration as it is imported, so a
command that catches a broken declaration imports the error from here, where importing cannot fail."""


class SpecError(ValueError):
    """The declaration cannot be used: the message names the file, the key and what to write instead."""
