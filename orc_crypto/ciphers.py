"""AES-CTR as ORC uses it: the IV layout and byte-range decryption by counter arithmetic."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

STRIPE_STATISTICS_KIND = 100
FILE_STATISTICS_KIND = 101
AES_CTR_128, AES_CTR_256 = 1, 2
KEY_LENGTHS = {AES_CTR_128: 16, AES_CTR_256: 32}


def stream_iv(column: int, kind: int, stripe_id: int) -> bytes:
    """IV of one stream: column (3 bytes) | kind (2) | stripe id from 1 (3) | counter 0 (8)."""
    if not 0 <= column <= 0xFFFFFF:
        raise ValueError(f"column id {column} does not fit the IV")
    if not 0 <= kind <= 0xFFFF:
        raise ValueError(f"stream kind {kind} does not fit the IV")
    if not 1 <= stripe_id <= 0xFFFFFF:
        raise ValueError(f"stripe id {stripe_id} must be in 1..16777215")
    return column.to_bytes(3, "big") + kind.to_bytes(2, "big") + stripe_id.to_bytes(3, "big") + bytes(8)


def aes_ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    """Encrypt or decrypt (the same operation) with a 128-bit big-endian counter from `iv`."""
    encryptor = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    return encryptor.update(data) + encryptor.finalize()


def advance_iv(iv: bytes, blocks: int) -> bytes:
    """`iv` + `blocks` as a 128-bit big-endian integer with carry (wraps like Java's CTR)."""
    return ((int.from_bytes(iv, "big") + blocks) % (1 << 128)).to_bytes(16, "big")


def decrypt_range(key: bytes, iv: bytes, data: bytes, offset: int) -> bytes:
    """Decrypt `data`, which starts at byte `offset` of a stream whose IV is `iv`."""
    skip = offset % 16
    plain = aes_ctr(key, advance_iv(iv, offset // 16), bytes(skip) + bytes(data))
    return plain[skip:]


def local_key_from_master(master: bytes, encrypted_key: bytes) -> bytes:
    """Local key = AES-CTR(master, IV = encrypted_key[:16]) over encrypted_key (doc §1)."""
    return aes_ctr(master, encrypted_key[:16], encrypted_key)
