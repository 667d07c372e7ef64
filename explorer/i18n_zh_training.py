"""简体中文 for the interface strings of the model families' training views (English source string → Chinese)."""

ZH_TRAINING: dict[str, str] = {}
