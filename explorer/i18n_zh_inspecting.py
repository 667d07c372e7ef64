"""简体中文 for the interface strings of the model families' inspecting views (English source string → Chinese)."""

ZH_INSPECTING: dict[str, str] = {}
