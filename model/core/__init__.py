"""The paper's model: attention, masks, positional encodings, feed-forward layers, the encoder and decoder
layers, the Transformer and its configuration (and the settings metadata every configuration uses)."""
