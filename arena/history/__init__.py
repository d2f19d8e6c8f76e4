"""A user's history (generations, comparisons, tournaments), read-only share links and exports."""
