"""Decoding a trained model: greedy, beam search and sampling (``search``), and the token-by-token steppers the
window drives (``stepping``)."""
