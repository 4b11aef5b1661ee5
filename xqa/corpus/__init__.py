"""The shipped multilingual Wikipedia sample (``xqa data corpus`` makes it; see NOTICE)."""
