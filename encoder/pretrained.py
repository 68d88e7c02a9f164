def load_pretrained(path=None):
    raise NotImplementedError
