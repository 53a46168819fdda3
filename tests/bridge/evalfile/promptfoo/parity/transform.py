"""A file transform for test_parity.py: the answer's last word, lower-cased."""


def last_word(output, context):
    return output.split()[-1].lower()
