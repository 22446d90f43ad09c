# Fast-start target: the 0.5 s NumPy/OpenCV script of issue 29 -- imports
# (~0.3 s), then matrix products and a blur for 0.5 s of wall time.  Prints
# "end <time.time()>" as its last act, so a harness can tell how long the
# profiler took after it.
import sys
import time

import cv2
import numpy as np

t0 = time.time()
a = np.random.rand(300, 300)
img = (np.random.rand(480, 640, 3) * 255).astype(np.uint8)
while time.time() - t0 < 0.5:
    b = a @ a
    g = cv2.GaussianBlur(img, (9, 9), 0)
print("end %.6f" % time.time(), flush=True)
sys.stdout.close()
