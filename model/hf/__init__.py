"""Hugging Face folders: their configuration and weights (``folders``) and their tokenizers (``tokenizers``)."""
