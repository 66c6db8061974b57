"""location.Place: whether one location holds another (--overwrite never deletes an input inside its output), here
for filesystems that differ only in the storage options that pick their server (no network: fsspec's in-memory
filesystem, and s3fs filesystems, which connect only when first used)."""

from __future__ import annotations

import pytest

from compilescope.location import Place, endpoint, place

fsspec = pytest.importorskip("fsspec")

MINIO_A = (("endpoint_url", "http://minio-a:9000"),)
MINIO_B = (("endpoint_url", "http://minio-b:9000"),)


def test_one_bucket_at_two_endpoints_is_two_filesystems():
    """s3://b/out at one MinIO and s3://b/out/x.log at another: nothing of one is in the other, so --overwrite of the
    first need not refuse for the second. Only the protocol and path were compared, and it refused."""
    out = Place("s3", "b/out", MINIO_A)
    assert not out.holds(Place("s3", "b/out/x.log", MINIO_B))
    assert not out.holds(Place("s3", "b/out", MINIO_B))
    assert out.holds(Place("s3", "b/out/x.log", MINIO_A))
    assert out.holds(out)


def test_an_endpoint_named_on_one_side_only_may_be_the_same():
    """A filesystem given no endpoint uses its default (AWS, or AWS_ENDPOINT_URL_S3 from the environment), which may
    be the endpoint the other names: still refused, either way round. So is one that names a port the other does not
    (sftp's default 22)."""
    named, unnamed = Place("s3", "b/out", MINIO_A), Place("s3", "b/out")
    assert named.holds(Place("s3", "b/out/x.log")) and unnamed.holds(Place("s3", "b/out/x.log", MINIO_A))
    on_host = Place("sftp", "/data/out", (("host", "h1"),))
    assert on_host.holds(Place("sftp", "/data/out/x.log", (("host", "h1"), ("port", "22"))))
    assert not on_host.holds(Place("sftp", "/data/out/x.log", (("host", "h2"),)))
    assert not Place("s3", "b/out").holds(Place("gcs", "b/out/x.log"))  # (another protocol, as before)


def test_endpoint_reads_the_options_that_pick_the_server():
    """endpoint_url directly or in s3fs's client_kwargs (the direct one wins, as in s3fs), host and port; credentials
    and tuning are left out (the same server whoever reads it); two spellings of one URL are one."""
    assert endpoint({"endpoint_url": "HTTP://Minio-A:9000/", "key": "k", "secret": "s"}) == MINIO_A
    assert endpoint({"client_kwargs": {"endpoint_url": "http://minio-a:9000", "region_name": "x"}}) == MINIO_A
    assert endpoint({"endpoint_url": "http://minio-b:9000", "client_kwargs": {"endpoint_url": "http://minio-a:9000"}}
                    ) == MINIO_B
    assert endpoint({"host": "h1", "port": 2222, "username": "me"}) == (("host", "h1"), ("port", "2222"))
    assert endpoint({"anon": True, "default_block_size": 5}) == ()


def test_memory_urls_however_wrapped_are_one_filesystem():
    """The in-memory filesystem names no endpoint: a log under OUT is held by OUT whether either is named plainly,
    through simplecache:: or dir:: (each wrapper unwrapped to the filesystem it writes to)."""
    root = "memory://compilescope-test-place"
    out = place(f"{root}/out")
    assert out == Place("memory", "/compilescope-test-place/out")
    for log in (f"{root}/out/x.log", f"simplecache::{root}/out/x.log", f"dir::{root}/out/x.log"):
        assert out.holds(place(log)), log
    assert place(f"simplecache::{root}/out").holds(place(f"{root}/out/x.log"))
    assert not out.holds(place(f"{root}/other/x.log"))


def test_s3_urls_take_their_endpoint_from_the_storage_options(monkeypatch):
    """s3:// URLs opened under fsspec's configured storage options (as FSSPEC_S3_ENDPOINT_URL sets them): the Place
    carries the endpoint, under simplecache:: too; the same URL under another endpoint is another filesystem."""
    pytest.importorskip("s3fs")
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": "http://minio-a:9000", "anon": True})
    out_a, cached_log_a = place("s3://b/out"), place("simplecache::s3://b/out/x.log")
    monkeypatch.setitem(fsspec.config.conf, "s3", {"client_kwargs": {"endpoint_url": "http://minio-b:9000"},
                                                   "anon": True})
    log_b = place("s3://b/out/x.log")
    assert (out_a.endpoint, cached_log_a.endpoint, log_b.endpoint) == (MINIO_A, MINIO_A, MINIO_B)
    assert out_a.holds(cached_log_a) and not out_a.holds(log_b)
