"""What differs between the families (encoder-decoder, decoder-only, encoder-only) and the options they combine
with (sparse experts, T5's relative bias): their objectives and the family registry."""
