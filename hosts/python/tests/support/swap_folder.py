"""For the race test: swaps a folder for a symlink to another folder and back, as fast as it can,
until killed or until its deadline passes (so a crashed test cannot leave it running).

Usage: python swap_folder.py DIR TARGET SECONDS. Prints "ready" once started.
"""
import os
import shutil
import sys
import time


def quietly(fn, *args):
    # The test's own writes race these steps (it may recreate DIR while it is away); a failed
    # step is skipped and the next round repairs the folder.
    try:
        fn(*args)
    except OSError:
        pass


def main():
    folder, target, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    away, link = folder + ".away", folder + ".link"
    deadline = time.monotonic() + seconds
    # The symlink is made once and renamed in and out: a rename is quicker than making a
    # symlink, so the folder turns into the symlink within one short step.
    os.symlink(target, link)
    print("ready", flush=True)
    while time.monotonic() < deadline:
        quietly(os.rename, folder, away)
        quietly(os.rename, link, folder)  # the symlink in
        quietly(os.rename, folder, link)  # and out again
        try:
            os.rename(away, folder)
        except OSError:
            quietly(os.rename, folder, link)  # the symlink, if it is still in
            quietly(shutil.rmtree, folder)  # a folder the test made meanwhile
            quietly(os.rename, away, folder)


if __name__ == "__main__":
    main()
