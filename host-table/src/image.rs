//! Device images as libomptarget hands them over: raw ELF, or wrapped in an LLVM OffloadBinary
//! (magic `10 ff 10 ad`, llvm/Object/OffloadBinary.h).

use crate::error::{PluginError, Result};

const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];
/// `{magic[4], u32 version, u64 size, u64 entry_offset, u64 entry_size}`.
const HEADER_SIZE: usize = 32;
/// `{u16 image_kind, u16 offload_kind, u32 flags, u64 string_offset, u64 num_strings,
/// u64 image_offset, u64 image_size}`.
const ENTRY_SIZE: usize = 40;
/// `{u64 key_offset, u64 value_offset}`.
const STRING_ENTRY_SIZE: usize = 16;

/// The image inside what libomptarget passed, with the packager's metadata when there was any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceImage<'a> {
    /// The device code itself (an ELF file for every backend here).
    pub bytes: &'a [u8],
    /// `triple=` of the OffloadBinary, if wrapped.
    pub triple: Option<String>,
    /// `arch=` of the OffloadBinary, if wrapped.
    pub arch: Option<String>,
}

/// Returns the image inside `bytes`: the payload of an OffloadBinary, or `bytes` itself.
pub fn unwrap(bytes: &[u8]) -> Result<DeviceImage<'_>> {
    if !bytes.starts_with(&OFFLOAD_BINARY_MAGIC) {
        return Ok(DeviceImage { bytes, triple: None, arch: None });
    }
    let bad = |why: &str| PluginError::InvalidImage(format!("OffloadBinary: {why}"));
    let header = bytes.get(..HEADER_SIZE).ok_or_else(|| bad("truncated header"))?;
    let size = read_u64(header, 8)?;
    let entry_offset = read_u64(header, 16)?;
    if size > bytes.len() as u64 {
        return Err(bad("size field exceeds the image"));
    }
    let binary = &bytes[..size as usize];
    let entry = slice(binary, entry_offset, ENTRY_SIZE as u64).ok_or_else(|| bad("entry out of bounds"))?;
    let string_offset = read_u64(entry, 8)?;
    let num_strings = read_u64(entry, 16)?;
    let image_offset = read_u64(entry, 24)?;
    let image_size = read_u64(entry, 32)?;
    let image = slice(binary, image_offset, image_size).ok_or_else(|| bad("image out of bounds"))?;
    let (mut triple, mut arch) = (None, None);
    for i in 0..num_strings {
        let at = i.checked_mul(STRING_ENTRY_SIZE as u64).and_then(|o| o.checked_add(string_offset));
        let pair = at
            .and_then(|at| slice(binary, at, STRING_ENTRY_SIZE as u64))
            .ok_or_else(|| bad("string table out of bounds"))?;
        let key = c_string(binary, read_u64(pair, 0)?).ok_or_else(|| bad("bad string key"))?;
        let value = c_string(binary, read_u64(pair, 8)?).ok_or_else(|| bad("bad string value"))?;
        match key.as_str() {
            "triple" => triple = Some(value),
            "arch" => arch = Some(value),
            _ => {}
        }
    }
    Ok(DeviceImage { bytes: image, triple, arch })
}

fn read_u64(bytes: &[u8], at: usize) -> Result<u64> {
    bytes
        .get(at..at + 8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| PluginError::InvalidImage("OffloadBinary: truncated field".into()))
}

fn slice(bytes: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let end = offset.checked_add(len)?;
    bytes.get(usize::try_from(offset).ok()?..usize::try_from(end).ok()?)
}

fn c_string(bytes: &[u8], offset: u64) -> Option<String> {
    let tail = bytes.get(usize::try_from(offset).ok()?..)?;
    let end = tail.iter().position(|&b| b == 0)?;
    String::from_utf8(tail[..end].to_vec()).ok()
}

/// Builds an OffloadBinary around `image` with the given string pairs (for tests and tools).
pub fn wrap(image: &[u8], strings: &[(&str, &str)]) -> Vec<u8> {
    let strings_at = HEADER_SIZE + ENTRY_SIZE;
    let mut text = Vec::new();
    let mut pairs = Vec::new();
    let text_at = strings_at + strings.len() * STRING_ENTRY_SIZE;
    for (key, value) in strings {
        let k = text_at + text.len();
        text.extend_from_slice(key.as_bytes());
        text.push(0);
        let v = text_at + text.len();
        text.extend_from_slice(value.as_bytes());
        text.push(0);
        pairs.push((k as u64, v as u64));
    }
    let image_at = (text_at + text.len()).next_multiple_of(8);
    let total = image_at + image.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&OFFLOAD_BINARY_MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    for v in [total as u64, HEADER_SIZE as u64, ENTRY_SIZE as u64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&1u16.to_le_bytes()); // IMG_Object
    out.extend_from_slice(&1u16.to_le_bytes()); // OFK_OpenMP
    out.extend_from_slice(&0u32.to_le_bytes());
    for v in [strings_at as u64, strings.len() as u64, image_at as u64, image.len() as u64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (k, v) in pairs {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&text);
    out.resize(image_at, 0);
    out.extend_from_slice(image);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_images_pass_through() {
        let elf = b"\x7fELF rest";
        assert_eq!(unwrap(elf).unwrap(), DeviceImage { bytes: elf, triple: None, arch: None });
    }

    #[test]
    fn wrapped_images_are_unwrapped_with_their_metadata() {
        let wrapped = wrap(b"\x7fELF payload", &[("triple", "x86_64-pc-linux-gnu"), ("arch", "")]);
        let image = unwrap(&wrapped).unwrap();
        assert_eq!(image.bytes, b"\x7fELF payload");
        assert_eq!(image.triple.as_deref(), Some("x86_64-pc-linux-gnu"));
        assert_eq!(image.arch.as_deref(), Some(""));
    }

    #[test]
    fn every_truncation_of_a_wrapped_image_is_an_error_not_a_panic() {
        let wrapped = wrap(b"\x7fELF payload", &[("triple", "t"), ("arch", "a")]);
        for len in 4..wrapped.len() {
            let mut cut = wrapped[..len].to_vec();
            // Keep the size field consistent with the cut so deeper checks are reached too.
            if len >= 16 {
                cut[8..16].copy_from_slice(&(len as u64).to_le_bytes());
            }
            assert!(unwrap(&cut).is_err(), "truncated to {len} bytes");
        }
    }

    #[test]
    fn garbage_offsets_are_errors() {
        let mut wrapped = wrap(b"\x7fELF", &[("arch", "x")]);
        wrapped[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(unwrap(&wrapped).is_err());
        let mut wrapped = wrap(b"\x7fELF", &[("arch", "x")]);
        // num_strings huge: the string-table walk must stop at the first out-of-bounds pair.
        wrapped[48..56].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        assert!(unwrap(&wrapped).is_err());
    }
}
