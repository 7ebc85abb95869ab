"""CIFAR-100 same-different on image features, train and test classes disjoint (Sec. 4.3, App. G.5).

Reads the python version of CIFAR-100 from a local directory; nothing is
ever downloaded. Get ``cifar-100-python.tar.gz`` from
https://www.cs.toronto.edu/~kriz/cifar.html and unpack it (``tar xzf``); the
directory ``cifar-100-python`` holds the pickles ``train`` and ``test``.
"""
import importlib.util
import math
import os
import pickle

import numpy as np

from .._validation import check_choice, check_int
from ._images import ImageTask, distinct_partner

CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
#: torchvision's file name of the ImageNet VGG-16 weights, and where it is published.
VGG16_FILE = "vgg16-397923af.pth"
VGG16_URL = "https://download.pytorch.org/models/" + VGG16_FILE
#: torchvision's VGG-16 "D" configuration: conv widths, "M" a max-pool.
VGG16_CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
             512, 512, 512, "M")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _find_dir(root):
    root = os.fspath(root)
    for d in (root, os.path.join(root, "cifar-100-python")):
        if all(os.path.isfile(os.path.join(d, f)) for f in ("train", "test")):
            return d
    raise FileNotFoundError(
        f"`root` must be a directory holding the CIFAR-100 python files 'train' and 'test' "
        f"(or their folder 'cifar-100-python'); got {root!r}, where they are missing. fastsd "
        f"never downloads: get cifar-100-python.tar.gz from {CIFAR_URL}, unpack it with "
        f"'tar xzf cifar-100-python.tar.gz' and pass the directory it creates.")


def load_cifar100(root):
    """Read the CIFAR-100 train and test pickles, merged (train first).

    Parameters
    ----------
    root : str or path
        The ``cifar-100-python`` directory or the directory holding it.

    Returns
    -------
    images : ndarray, shape (N, 3, 32, 32), uint8
        Channel-first RGB (N = 60000 for the full data set).
    labels : ndarray, shape (N,), int64
        ``fine_labels``, 0..99.

    Raises
    ------
    FileNotFoundError
        When the files are missing, with where to get them.
    """
    d = _find_dir(root)
    images, labels = [], []
    for name in ("train", "test"):
        with open(os.path.join(d, name), "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
        images.append(np.asarray(batch["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels.append(np.asarray(batch["fine_labels"], dtype=np.int64))
    return np.concatenate(images), np.concatenate(labels)


def vgg16_relu_index(layer):
    """Position in torchvision's ``vgg16().features`` of the ReLU named "relu<block>_<conv>".

    Raises
    ------
    ValueError
        For a name that is not a ReLU of VGG-16 (relu1_1 .. relu5_3).
    """
    names, pos, block, conv = [], 0, 1, 0
    for c in VGG16_CFG:
        if c == "M":
            pos += 1
            block, conv = block + 1, 0
        else:
            conv += 1
            names.append((f"relu{block}_{conv}", pos + 1))
            pos += 2
    check_choice("layer", layer, [n for n, _ in names])
    return dict(names)[layer]


def vgg16_features(layer="relu4_3", weights=None, normalize="imagenet", batch_size=256):
    """A feature extractor: flattened activations of a VGG-16 layer (ImageNet weights, fixed).

    Needs torchvision and the weights file on this machine; nothing is
    downloaded. The paper uses relu4_3 (Fig. 3h; 8192 features at 32 x 32).

    Parameters
    ----------
    layer : str, default "relu4_3"
        "relu<block>_<conv>", block 1..5 (conv 1..2 in blocks 1-2, 1..3 after).
    weights : str or path, optional
        torchvision's ``vgg16-397923af.pth``; default
        ``<torch.hub.get_dir()>/checkpoints/vgg16-397923af.pth``.
    normalize : {"imagenet", "zscore"}
        "imagenet": pixels / 255 standardised per channel with the ImageNet
        mean and std (torchvision's convention). "zscore": one global mean
        and std over the batch's pixels (the published code's convention).
    batch_size : int, default 256
        Images per forward pass.

    Returns
    -------
    callable
        ``f(images)`` with images (n, 3, 32, 32) uint8 -> (n, k) float32.

    Raises
    ------
    ImportError
        When torchvision is not installed.
    FileNotFoundError
        When the weights file is missing, with where to get it and put it.
    """
    idx = vgg16_relu_index(layer)
    check_choice("normalize", normalize, ("imagenet", "zscore"))
    batch_size = check_int("batch_size", batch_size, minimum=1)
    if any(importlib.util.find_spec(m) is None for m in ("torch", "torchvision")):
        raise ImportError("vgg16_features needs torch and torchvision (pip install torchvision); "
                          "or pass CifarPairs(features=...) a callable or an array of features "
                          "computed elsewhere.")
    import torch
    import torchvision
    if weights is None:
        weights = os.path.join(torch.hub.get_dir(), "checkpoints", VGG16_FILE)
    if not os.path.isfile(weights):
        raise FileNotFoundError(
            f"`weights` must be a file of VGG-16 ImageNet weights; got {os.fspath(weights)!r}, "
            f"which does not exist. fastsd never downloads: fetch {VGG16_URL} on a machine with "
            f"internet access and copy it to that path (or pass its path as `weights`).")
    model = torchvision.models.vgg16(weights=None)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    net = model.features[: idx + 1].eval()
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)

    def extract(images):
        x = torch.as_tensor(np.asarray(images), dtype=torch.float32)
        if normalize == "imagenet":
            x = (x / 255.0 - mean) / std
        else:
            x = (x - x.mean()) / x.std()
        with torch.no_grad():
            out = [net(x[i:i + batch_size]).flatten(1) for i in range(0, len(x), batch_size)]
        return torch.cat(out).numpy()

    return extract


class CifarPairs(ImageTask):
    """CIFAR-100 same-different: a pair of images of one class or of two (App. G.5).

    The train and test pickles are merged (60,000 images); the classes
    present are split at random (from ``seed``) into ``n_train_classes``
    training classes and the rest for testing, so train and test classes are
    disjoint. A pair is x = (phi(img1); phi(img2)) / sqrt(p), p = 2 k the
    length of x and phi a feature map with k outputs: the 1/sqrt(d) input
    normalisation of App. G.5. A same pair shows two distinct images of one
    class; a different pair images of two distinct classes.

    Unlike the grid tasks, this task keeps the 1/sqrt(d) output factor
    (``scale_dim = p``) and uses alpha0 = 0.01, so alpha = gamma^2 p alpha0:
    the published code's ``gamma * D`` output scale and ``gamma^2 D 0.01``
    learning rate on unnormalised features, which train identically.

    Parameters
    ----------
    root : str or path
        The ``cifar-100-python`` directory or the directory holding it.
    features : None, callable or array_like
        None: the raw pixels, z-scored with one global mean and std (the
        paper's "id" input, k = 3072). A callable maps images
        (n, 3, 32, 32) uint8 to features (n, ...), e.g.
        ``vgg16_features("relu4_3")``. An array holds precomputed features,
        one row per image in the merged order (train file, then test file).
    n_train_classes : int
        Training classes L, 2 <= L <= C - 2 with C the classes present (100).
    seed : int, SeedSequence or None
        Seed of the class split; None draws fresh entropy.

    Attributes
    ----------
    L : int
        ``n_train_classes``.
    train_classes, test_classes : ndarray of int
        Fine labels of the training and test classes.
    features : ndarray, shape (N, k), float32
        phi of every image.
    feature_shape : tuple
        Shape of one image's features before flattening.
    input_dim : int
        p = 2 k.

    Raises
    ------
    FileNotFoundError
        When ``root`` does not hold the CIFAR-100 files (with where to get them).
    ValueError, TypeError
        For a parameter out of range or of the wrong type, a feature array
        with a row count other than the number of images, or a class with
        fewer than two images.

    Examples
    --------
    >>> task = CifarPairs("/data/cifar-100-python", n_train_classes=90, seed=0)  # doctest: +SKIP
    >>> x, y = task.sample_train(128, seed=1)                                    # doctest: +SKIP
    >>> x.shape                                                                   # doctest: +SKIP
    (128, 6144)
    """

    default_alpha0 = 0.01

    def __init__(self, root, features=None, n_train_classes=None, seed=None):
        images, labels = load_cifar100(root)
        classes = np.unique(labels)
        n_train = self._check_n_train(
            "n_train_classes", n_train_classes, classes.size - 2,
            f", so that two of the {classes.size} classes are left for testing")
        split = self._item_stream(seed)
        if features is None:
            feats = images.reshape(len(images), 3, 32, 32).astype(np.float32)
            feats = (feats - feats.mean()) / feats.std()
        elif callable(features):
            feats = np.asarray(features(images))
        else:
            feats = np.asarray(features)
        if feats.ndim < 2 or feats.shape[0] != len(images) or feats.dtype.kind not in "fiu":
            raise ValueError(f"`features` must give a numeric array with one row per image "
                             f"({len(images)}); got shape {feats.shape}, dtype {feats.dtype}.")
        if not np.all(np.isfinite(feats)):
            raise ValueError("`features` must be finite (no NaN or inf); got NaN or inf.")
        self.feature_shape = feats.shape[1:]
        self.features = np.ascontiguousarray(feats.reshape(len(images), -1), dtype=np.float32)
        counts = np.bincount(labels, minlength=classes.max() + 1)
        if counts[classes].min() < 2:
            raise ValueError("`root` must hold at least two images of every class (a same pair "
                             f"shows two distinct images); got a class with "
                             f"{counts[classes].min()}.")
        perm = split.permutation(classes)
        self.train_classes, self.test_classes = perm[:n_train], perm[n_train:]
        self._order = np.argsort(labels, kind="stable")       # image indices grouped by class
        self._start = np.concatenate([[0], np.cumsum(counts)])[:-1]
        self._count = counts
        self.input_dim = 2 * self.features.shape[1]
        self.scale_dim = self.input_dim
        self.image_shape = (2, *self.feature_shape)
        self._norm = 1.0 / math.sqrt(self.input_dim)

    def __repr__(self):
        return (f"CifarPairs(n_train_classes={self.L}, features={self.feature_shape}, "
                f"classes={self.train_classes.size + self.test_classes.size})")

    def _pairs(self, c1, c2, rng):
        """Inputs for class arrays c1, c2: distinct images when c1 == c2."""
        n1, n2 = self._count[c1], self._count[c2]
        r1 = (rng.random(c1.shape) * n1).astype(np.int64)
        r2 = np.where(c1 == c2, (r1 + 1 + (rng.random(c1.shape) * (n1 - 1)).astype(np.int64)) % n1,
                      (rng.random(c1.shape) * n2).astype(np.int64))
        i1 = self._order[self._start[c1] + r1]
        i2 = self._order[self._start[c2] + r2]
        x = np.concatenate([self.features[i1], self.features[i2]], axis=-1)
        return x.astype(np.float64) * self._norm

    def training_inputs(self, u, v, rng):
        """Feature pairs of training classes u and v (index arrays (n,)); shape (n, input_dim)."""
        return self._pairs(self.train_classes[u], self.train_classes[v], rng)

    def _test_inputs(self, y, rng):
        k = self.test_classes.size
        a = rng.integers(0, k, size=y.shape[0])
        return self._pairs(self.test_classes[a], self.test_classes[distinct_partner(a, y, k, rng)],
                           rng)
