from plughost_sdk import Plugin


class Broken(Plugin)
    pass
