"""What every test folder shares besides fixtures (those are in tests/conftest.py)."""

SENTENCE = "The animal didn't cross the street because it was too tired."  # the lesson's sentence
