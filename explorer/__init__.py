"""The Transformer Explorer desktop application (Qt). Imports ``model``; never the reverse."""
