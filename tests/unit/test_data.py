import gzip
import os
import pathlib
import shutil

import numpy as np
import pytest

import tfperf
from tfperf.data import IDX_FILES, DataFileError

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"
real_mnist = pytest.mark.skipif(not (SHARED / "train-images-idx3-ubyte.gz").exists(), reason="the shared MNIST copy is not on this machine")


@real_mnist
def test_loader_verifies_and_reads_the_shared_idx_files(monkeypatch):
    monkeypatch.setenv("TFPERF_DATA", str(SHARED))
    data = tfperf.load_mnist(verbose=False)
    assert data.x_train.shape == (60000, 28, 28) and data.x_train.dtype == np.uint8
    assert data.y_test.shape == (10000,) and data.real
    assert list(data.y_train[:5]) == [5, 0, 4, 1, 9]


@real_mnist
def test_size_argument_keeps_a_subset(monkeypatch):
    monkeypatch.setenv("TFPERF_DATA", str(SHARED))
    data = tfperf.load_mnist(size=600, verbose=False)
    assert len(data.x_train) == 600 and len(data.x_test) == 100


@real_mnist
def test_truncated_file_is_rejected_with_a_clear_message(tmp_path):
    for name in IDX_FILES:
        shutil.copy(SHARED / name, tmp_path / name)
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(DataFileError, match=r"train-labels-idx1-ubyte.gz is 1,000 bytes but should be 28,881: the file is truncated"):
        tfperf.load_mnist(data_dir=tmp_path, verbose=False)


@real_mnist
def test_corrupt_file_with_the_right_size_fails_its_checksum(tmp_path):
    raw = bytearray((SHARED / "t10k-labels-idx1-ubyte.gz").read_bytes())
    raw[100] ^= 0xFF
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(bytes(raw))
    with pytest.raises(DataFileError, match="wrong sha256 checksum"):
        tfperf.data.read_idx(tmp_path / "t10k-labels-idx1-ubyte.gz")


def test_partial_folder_names_the_missing_files(tmp_path):
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"x")
    with pytest.raises(DataFileError, match="holds 1 of the 4 MNIST IDX files.*missing: train-labels"):
        tfperf.load_mnist(data_dir=tmp_path, verbose=False)


def test_a_missing_folder_is_an_error_not_a_silent_fallback(tmp_path):
    with pytest.raises(DataFileError, match="not a folder"):
        tfperf.load_mnist(data_dir=tmp_path / "nope", verbose=False)


def test_idx_reader_rejects_a_header_that_promises_more_data(tmp_path):
    path = tmp_path / "small.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x01" + (100).to_bytes(4, "big") + bytes(10)))
    with pytest.raises(DataFileError, match="header announces shape"):
        tfperf.data.read_idx(path)


def test_falls_back_to_generated_digits_and_says_so(no_real_mnist, capsys):
    data = tfperf.load_mnist(size=300)
    assert data.source == "generated" and not data.real
    assert data.x_train.shape == (300, 28, 28) and data.x_train.dtype == np.uint8 and data.y_train.dtype == np.uint8
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "NOT real MNIST" in out


def test_keras_cache_is_used_when_present(no_real_mnist, tmp_path, monkeypatch):
    cache = pathlib.Path(os.environ["KERAS_HOME"]) / "datasets" / "mnist.npz"
    cache.parent.mkdir(parents=True)
    np.savez(cache, x_train=np.zeros((2, 28, 28), np.uint8), y_train=np.zeros(2, np.uint8),
             x_test=np.zeros((1, 28, 28), np.uint8), y_test=np.zeros(1, np.uint8))
    monkeypatch.setattr(tfperf.data, "NPZ_SHA256", tfperf.data._sha256(cache))
    data = tfperf.load_mnist(verbose=False)
    assert data.source.startswith("Keras cache") and data.x_train.shape == (2, 28, 28)


def test_generated_digits_are_deterministic():
    first, second = tfperf.data.generate_digits(64, seed=3), tfperf.data.generate_digits(64, seed=3)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    assert not np.array_equal(first[0], tfperf.data.generate_digits(64, seed=4)[0])


def test_generated_digits_are_learnable():
    """A nearest-class-mean classifier, far weaker than a CNN, already separates the classes."""
    x, y = tfperf.data.generate_digits(3000, seed=0)
    x_test, y_test = tfperf.data.generate_digits(600, seed=1)
    means = np.stack([x[y == d].reshape(-1, 784).mean(0) for d in range(10)])
    predicted = np.argmin(((x_test.reshape(-1, 1, 784) - means[None]) ** 2).sum(-1), axis=1)
    assert (predicted == y_test).mean() > 0.6
    assert set(np.unique(y)) == set(range(10))
