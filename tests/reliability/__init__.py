"""Reliability proofs: crashes mid-batch, isolation, keys at rest."""
