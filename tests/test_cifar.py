"""CIFAR-100 pairs (Sec. 4.3, App. G.5) on a tiny synthetic file in the real format.

The files are written as the real ``cifar-100-python`` pickles are laid out:
a dict with bytes keys, ``data`` (n, 3072) uint8 channel-major (1024 red,
1024 green, 1024 blue, each row-major 32 x 32) and ``fine_labels``.
"""
import math
import pickle

import numpy as np
import pytest

from fastsd import train_ensemble
from fastsd.tasks import CifarPairs, vgg16_features
from fastsd.tasks.cifar import load_cifar100, vgg16_relu_index

N_CLASSES, N_TRAIN_PER, N_TEST_PER = 8, 5, 2


def write_split(path, labels, rng):
    data = rng.integers(0, 256, size=(len(labels), 3072), dtype=np.uint8)
    batch = {b"data": data, b"fine_labels": list(map(int, labels)),
             b"coarse_labels": [0] * len(labels), b"batch_label": b"synthetic",
             b"filenames": [b"img%d.png" % i for i in range(len(labels))]}
    with open(path, "wb") as fh:
        pickle.dump(batch, fh, protocol=2)
    return data


@pytest.fixture(scope="module")
def cifar_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    d = root / "cifar-100-python"
    d.mkdir()
    rng = np.random.default_rng(0)
    ltrain = np.repeat(np.arange(N_CLASSES), N_TRAIN_PER)[rng.permutation(N_CLASSES * N_TRAIN_PER)]
    ltest = np.repeat(np.arange(N_CLASSES), N_TEST_PER)
    dtrain = write_split(d / "train", ltrain, rng)
    dtest = write_split(d / "test", ltest, rng)
    return root, np.concatenate([dtrain, dtest]), np.concatenate([ltrain, ltest])


def test_load_layout(cifar_dir):
    root, data, labels = cifar_dir
    for where in (root, root / "cifar-100-python", str(root)):
        images, lab = load_cifar100(where)
        assert images.shape == (len(labels), 3, 32, 32) and images.dtype == np.uint8
        np.testing.assert_array_equal(lab, labels)
    # pixel (channel c, row i, column j) is data[c * 1024 + i * 32 + j]
    assert images[7, 1, 3, 5] == data[7, 1024 + 3 * 32 + 5]
    assert images[0, 2, 31, 0] == data[0, 2048 + 31 * 32]


def test_missing_path_names_where_to_get_the_data(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"`root` must be a directory .*cifar\.html"):
        CifarPairs(tmp_path / "nowhere", n_train_classes=4)


def identify(task, x):
    """Image indices of the two halves, read back from index features (row i = i + 1)."""
    halves = np.rint(x * math.sqrt(task.input_dim)).astype(int) - 1
    return halves[:, 0], halves[:, 1]


def test_pairs_by_class_and_disjoint_splits(cifar_dir):
    root, _, labels = cifar_dir
    feats = np.arange(len(labels), dtype=float)[:, None] + 1.0       # feature = image index + 1
    task = CifarPairs(root, features=feats, n_train_classes=5, seed=3)
    assert task.input_dim == 2 and task.scale_dim == 2
    assert set(task.train_classes) | set(task.test_classes) == set(range(N_CLASSES))
    assert not set(task.train_classes) & set(task.test_classes)
    for sampler, classes in ((task.sample_train, task.train_classes),
                             (task.sample_test, task.test_classes)):
        x, y = sampler(4000, seed=1)
        assert y.mean() == 0.5
        i1, i2 = identify(task, x)
        c1, c2 = labels[i1], labels[i2]
        assert np.all(np.isin(c1, classes)) and np.all(np.isin(c2, classes))
        np.testing.assert_array_equal(c1 == c2, y == 1.0)
        assert np.all(i1[y == 1.0] != i2[y == 1.0])              # two distinct images
        # every image of the split's classes is used (7 images per class)
        assert set(np.unique(np.concatenate([i1, i2]))) == set(np.flatnonzero(np.isin(labels,
                                                                                     classes)))


def test_default_pixels_z_scored_and_normalised(cifar_dir):
    root, data, _ = cifar_dir
    task = CifarPairs(root, n_train_classes=4, seed=0)
    assert task.feature_shape == (3, 32, 32) and task.input_dim == 2 * 3072
    f = task.features.astype(np.float64)
    assert abs(f.mean()) < 1e-5 and abs(f.std() - 1) < 1e-5
    z = (data.astype(float) - data.mean()) / data.std()
    np.testing.assert_allclose(f, z, rtol=1e-5, atol=1e-5)
    x, _ = task.sample_test(10, seed=0)
    # x = (phi1; phi2) / sqrt(p): the squared norm is the mean squared feature over both halves
    assert np.all(np.abs(np.sum(x ** 2, axis=1) - 1.0) < 0.1)
    assert task.weights_as_images(np.zeros((3, 6144))).shape == (3, 2, 3, 32, 32)


def test_callable_features_get_channel_first_uint8(cifar_dir):
    root, _, labels = cifar_dir
    seen = {}

    def phi(images):
        seen["shape"], seen["dtype"] = images.shape, images.dtype
        return images[:, :, :2, :2].reshape(len(images), -1)[:, :5]

    task = CifarPairs(root, features=phi, n_train_classes=2, seed=0)
    assert seen == {"shape": (len(labels), 3, 32, 32), "dtype": np.uint8}
    assert task.input_dim == 10


def test_trains_with_symbol_scaling_and_alpha0(cifar_dir):
    root, _, _ = cifar_dir
    task = CifarPairs(root, n_train_classes=4, seed=0)
    r = train_ensemble(task, 0.5, 0, width=4, steps=3, batch_size=8, eval_every=3, n_test=16)[0]
    p = task.input_dim
    assert r.config["alpha0"] == 0.01
    assert r.config["lr"] == pytest.approx(0.25 * p * 0.01)
    assert r.config["output_scale"] == pytest.approx(1 / (0.5 * math.sqrt(p)))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(n_train_classes=7), ValueError, r"`n_train_classes` must be an integer <= 6"),
    (dict(n_train_classes=1), ValueError, r"`n_train_classes` must be an integer >= 2"),
    (dict(), TypeError, r"`n_train_classes` must be given"),
    (dict(n_train_classes=3, features=np.zeros((5, 2))), ValueError,
     r"`features` must give a numeric array with one row per image \(56\)"),
    (dict(n_train_classes=3, features=np.full((56, 2), np.nan)), ValueError, r"finite"),
])
def test_bad_input_clear_errors(cifar_dir, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        CifarPairs(cifar_dir[0], **kwargs)


def test_vgg16_layer_positions():
    """Positions of the ReLUs in torchvision's vgg16().features (conv, relu pairs, pools)."""
    expected = {"relu1_1": 1, "relu1_2": 3, "relu2_1": 6, "relu2_2": 8, "relu3_1": 11,
                "relu3_3": 15, "relu4_1": 18, "relu4_3": 22, "relu5_1": 25, "relu5_3": 29}
    for name, pos in expected.items():
        assert vgg16_relu_index(name) == pos
    with pytest.raises(ValueError, match="`layer` must be one of"):
        vgg16_relu_index("relu1_3")


def test_vgg16_without_torchvision_or_weights_explains(tmp_path):
    try:
        import torchvision  # noqa: F401
        exc, match = FileNotFoundError, "fastsd never downloads"
    except ImportError:
        exc, match = ImportError, "needs torch and torchvision"
    with pytest.raises(exc, match=match):
        vgg16_features("relu4_3", weights=tmp_path / "missing.pth")
