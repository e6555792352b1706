"""ORC file codec: tail, stripe footers, stream layout and compression chunks."""
