"""Where plain Python beats numpy (one place for the engine and the placers).

Up to :data:`SMALL` items (a VC's nodes, the tail of a queue), a rule runs over Python lists;
beyond, over numpy arrays. The twins of each rule give the same answers (tested on both sides
of the threshold); only the speed differs.
"""

SMALL = 64
