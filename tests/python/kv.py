"""kv.py — fold.KVStore against numpy. One rank: a local store (several devices, sgd, a Python updater, string
keys, bad input, an updater that raises). More ranks: dist_sync with FOLD_KV_SERVERS servers (a key split
over them by FOLD_KV_BIGARRAY_BOUND), every round equal to a serial numpy reference; a Python updater on the
servers; bad input on workers and servers."""
import os
import sys

import numpy as np

import fold
import harness

comm = fold.init()
r, n = comm.rank, comm.size
check = harness.Checks(r)


def raises(cls, fn, *words):
    try:
        fn()
    except cls as e:
        for w in words:
            check(w in str(e), f"{cls.__name__} message {str(e)!r} lacks {w!r}")
        return e
    except Exception as e:  # noqa: BLE001
        check(False, f"wanted {cls.__name__}, got {type(e).__name__}: {e}")
        return None
    check(False, f"wanted {cls.__name__}, nothing raised")
    return None


def sgd_ref(w, mom, g, lr, mu):
    mom[:] = mu * mom - lr * g
    w += mom


def local():
    # several devices per key, summed; no updater: the sum replaces the value
    with fold.KVStore(None, "local") as kv:
        check(kv.role == fold.KV_WORKER, "a local store is a worker")
        rng = np.random.default_rng(1)
        w0 = rng.integers(-8, 8, 1000).astype(np.float64)
        kv.init("weight", w0)
        kv.init(5, np.arange(7, dtype=np.int32))
        devs = [rng.integers(-8, 8, 1000).astype(np.float64) for _ in range(4)]
        kv.push("weight", devs)
        outs = [np.empty(1000), np.empty(1000)]
        kv.pull("weight", outs)
        kv.wait()
        check(all(np.array_equal(o, sum(devs)) for o in outs), "local: the pushed sum, on every output")
        # string keys are fold_kv_key's: the same key as kv.key(name)
        k = kv.key("weight")
        check(k < 0, "a string key is negative")
        o = np.empty(1000)
        kv.pull(k, o)
        kv.wait()
        check(np.array_equal(o, sum(devs)), "pull by kv.key(name)")
        # pushpull in place, an int key, two keys in one call
        a, b = np.full(7, 3, np.int32), np.full(7, 4, np.int32)
        kv.pushpull([5, 5], [a, b])
        kv.wait()
        check(np.array_equal(a, np.full(7, 7)) and np.array_equal(b, a), f"pushpull in place: {a} {b}")
        # a Python updater: gets (key, merged, stored) as numpy views; stored updated in place
        seen = []

        def upd(key, merged, stored):
            seen.append((key, merged.dtype, stored.shape))
            stored += 2 * merged

        kv.set_updater(upd)
        kv.push(["weight", 5], [[devs[0], devs[1]], np.ones(7, np.int32)])
        kv.pull(["weight", 5], [o, a])
        kv.wait()
        check(np.array_equal(o, sum(devs) + 2 * (devs[0] + devs[1])), "updater on weight")
        check(np.array_equal(a, np.full(7, 9)), f"updater on int key: {a}")
        check(seen == [("weight", np.float64, (1000,)), (5, np.int32, (7,))], f"updater calls: {seen}")

        # an updater that raises: not swallowed, raised by the next call, stored value untouched
        def bad(key, merged, stored):
            raise ValueError(f"bad update of {key}")

        kv.set_updater(bad)
        raises(ValueError, lambda: kv.push("weight", o), "bad update of weight")
        # an updater that calls into its own store: refused as such, raised by the next call
        def reenter(key, merged, stored):
            kv.push(key, merged)

        kv.set_updater(reenter)
        raises(fold.InvalidArgument, lambda: kv.push("weight", o), "may not call into its own store")
        kv.set_updater(None)  # none: a push replaces
        kv.push(5, np.full(7, 1, np.int32))
        kv.pull(5, a)
        kv.wait()
        check(np.array_equal(a, np.ones(7)), "no updater: push replaces")

        # bad input: InvalidArgument naming the key, nothing changed
        raises(fold.InvalidArgument, lambda: kv.push("weight", np.ones(999)), "'weight'", "1000", "999")
        raises(fold.InvalidArgument, lambda: kv.push("weight", np.ones(1000, np.float32)), "'weight'", "float32")
        raises(fold.InvalidArgument, lambda: kv.pull("nope", o), "'nope'", "never initialised")
        raises(fold.InvalidArgument, lambda: kv.pull(77, o), "77")
        raises(fold.InvalidArgument, lambda: kv.init("weight", w0), "weight")
        raises(fold.InvalidArgument, lambda: kv.push(["weight", 5], [o]), "2 keys but 1 values")
        raises(fold.InvalidArgument, lambda: kv.push(1.5, o), "int or a str")
        raises(fold.InvalidArgument, lambda: kv.pull("weight", np.ones(1000)[::2]))
        raises(fold.InvalidArgument, lambda: kv.key(""), "")
        raises(fold.InvalidArgument, lambda: kv.set_optimizer("sgd lr=oops"), "lr")
        raises(fold.InvalidArgument, lambda: kv.set_updater(3), "callable")
        raises(fold.InvalidArgument, kv.serve, "")
        kv.pull("weight", o)
        kv.wait()
        check(np.array_equal(o, sum(devs) + 2 * (devs[0] + devs[1])), "bad input changed nothing")
        check(kv.dead_nodes() == [], "a local store has no dead nodes")

        # the built-in sgd with momentum, against numpy
        kv.set_optimizer("sgd lr=0.5 momentum=0.5")
        kv.init("m", np.zeros(16))
        ref, mom = np.zeros(16), np.zeros(16)
        for t in range(5):
            g = [np.arange(16.0) * (t + 1), np.full(16, float(t))]
            kv.push("m", g)
            sgd_ref(ref, mom, g[0] + g[1], 0.5, 0.5)
            kv.pull("m", o[:16])
            kv.wait()
            check(np.array_equal(o[:16], ref), f"sgd round {t}: {o[:16]} != {ref}")
    check(kv.destroyed, "the context manager destroyed the store")
    raises(fold.InvalidArgument, lambda: kv.push(5, a), "destroyed")
    # a comm given: a local store on it, errors through its last error
    kv = fold.KVStore(comm, "local")
    raises(fold.InvalidArgument, lambda: kv.pull(3, a), "3")
    kv.destroy()
    raises(fold.InvalidArgument, lambda: fold.KVStore(None, "dist_sync"), "")
    raises(fold.InvalidArgument, lambda: fold.KVStore(None, "bogus"), "")


def dist():
    S = int(os.environ.get("FOLD_KV_SERVERS", "1"))
    W = n - S
    kv = fold.KVStore(comm, "dist_sync")
    check(kv.role == (fold.KV_SERVER if r >= W else fold.KV_WORKER), f"role {kv.role}")
    big = 600  # above FOLD_KV_BIGARRAY_BOUND=256 (the test sets it): split over the servers
    if kv.role == fold.KV_SERVER:
        raises(fold.InvalidArgument, lambda: kv.push(0, np.zeros(4)), "")
        kv.serve()
        kv.destroy()
    else:
        kv.set_optimizer("sgd lr=0.5 momentum=0.5 wd=0")
        keys = ["emb", 3, "bias"]
        init = [np.arange(big, dtype=np.float64) % 5, np.full(10, 2.0), np.zeros(3, np.float32)]
        for k, v in zip(keys, init):
            kv.init(k, v)
        kv.barrier()
        ref = [v.copy() for v in init]
        mom = [np.zeros_like(v) for v in init]
        outs = [np.empty_like(v) for v in init]
        for t in range(6):
            def grad(w, k):
                return (np.arange(len(init[k])) % 7 + (w + 1) * (t + 1)).astype(init[k].dtype)
            # "emb" from two devices on each worker (summed locally first)
            mine = [[grad(r, 0), grad(r, 0)], grad(r, 1), grad(r, 2)]
            kv.push(keys, mine)
            kv.pull(keys, outs)
            kv.wait()
            for k in range(3):
                g = sum(grad(w, k) * (2 if k == 0 else 1) for w in range(W))
                sgd_ref(ref[k], mom[k], g, init[k].dtype.type(0.5), init[k].dtype.type(0.5))
                check(np.array_equal(outs[k], ref[k]), f"round {t} key {keys[k]}: {outs[k][:5]} != {ref[k][:5]}")
        raises(fold.InvalidArgument, lambda: kv.push("emb", np.zeros(big - 1)), "'emb'", str(big))
        raises(fold.InvalidArgument, lambda: kv.pull("ghost", np.zeros(4)), "'ghost'")
        check(kv.dead_nodes() == [], "nobody died")
        kv.barrier()
        kv.destroy()

    # a Python updater on the servers: each server sets it before serve
    kv = fold.KVStore(comm, "dist_sync")
    if kv.role == fold.KV_SERVER:
        calls = []

        def upd(key, merged, stored):
            calls.append(key)
            stored[:] = stored * 2 + merged
        kv.set_updater(upd)
        kv.key("u")  # known here: the updater gets the name, not the hash
        # no barrier before serve: a server takes no push before serve(), even with FOLD_PROGRESS_THREAD=1
        # (docs/python.md)
        kv.serve()
        kv.destroy()
        check(len(calls) > 0 and set(calls) <= {"u", 9}, f"server updater calls {calls[:4]}")
    else:
        kv.init("u", np.ones(big))
        kv.init(9, np.ones(4, np.int64))
        ref_u, ref_9 = np.ones(big), np.ones(4, np.int64)
        ou, o9 = np.empty(big), np.empty(4, np.int64)
        for t in range(4):
            kv.pushpull(["u", 9], [np.full(big, float(r + t)), np.full(4, r * t, np.int64)], [ou, o9])
            kv.wait()
            ref_u = ref_u * 2 + sum(np.full(big, float(w + t)) for w in range(W))
            ref_9 = ref_9 * 2 + sum(np.full(4, w * t, np.int64) for w in range(W))
            check(np.array_equal(ou, ref_u) and np.array_equal(o9, ref_9), f"updater round {t}: {ou[:3]} {o9}")
        kv.destroy()


if n == 1:
    local()
else:
    dist()
comm.barrier()
print(f"rank {r}: {'OK' if not check.failed else f'{len(check.failed)} FAILED'}", flush=True)
sys.exit(1 if check.failed else 0)
