"""简体中文 for the interface strings of the model families' decoding views (English source string → Chinese)."""

ZH_DECODING: dict[str, str] = {}
