"""Reliability proofs (issue 7): crashes mid-batch, isolation, keys at rest."""
