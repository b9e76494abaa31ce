"""`latentfuzz repair`: fine-tune a copy of a classifier on its validated failures, beside
two controls at equal count, and measure all three before and after (issue 38)."""
