; Go has no nested named functions or class-like containers: methods are qualified by their receiver.
