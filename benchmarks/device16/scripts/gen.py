import numpy as np, sys
rng = np.random.default_rng(7)
letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
words = np.array(["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(5000)])
with open(sys.argv[1], "w") as f:
    n = 0
    while n < 60_000_000:
        w = words[rng.integers(0, 5000, 120_000)].reshape(-1, 12)
        s = "\n".join(" ".join(r) for r in w) + "\n"
        f.write(s); n += len(s)
