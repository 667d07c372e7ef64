"""The error a person can cause with data (a bad file, a missing package) and can act on."""


class DataError(ValueError):
    """A problem with training data, with a message that says what to do."""
