"""The strict fakes' parts: rules from reported failures, the SDKs' request types, profiles.

The servers themselves are ``tests/fake_openai.py`` and ``tests/fake_gemini.py``.
"""
