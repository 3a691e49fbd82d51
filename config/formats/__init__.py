"""Our formats per language (FORMAT_MODULE_PATH), where Django's own do not suit."""
