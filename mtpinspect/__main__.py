from mtpinspect.cli import entry

entry()
