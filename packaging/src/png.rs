//! PNG files of 8-bit RGB pixels, the rows in stored (uncompressed) deflate blocks: every reader
//! takes them and they need no compressor. For the demo's picture and the GPU bench's plot.

/// A PNG of `rgb` (`width * height` pixels of 3 bytes, rows top first).
pub fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let row = width as usize * 3;
    let mut raw = Vec::with_capacity(rgb.len() + height as usize);
    for pixels in rgb.chunks(row) {
        raw.push(0); // filter: none
        raw.extend_from_slice(pixels);
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(0xffff).collect();
    for (i, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend(len.to_le_bytes());
        zlib.extend((!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    zlib.extend(adler32(&raw).to_be_bytes());
    let mut header = Vec::new();
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    // 8 bits a channel, RGB, deflate, filter method 0 (each row names its filter), no interlace.
    header.extend([8, 2, 0, 0, 0]);
    let mut file = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(b"IHDR", &header[..]), (b"IDAT", &zlib[..]), (b"IEND", &[][..])] {
        file.extend((data.len() as u32).to_be_bytes());
        let start = file.len();
        file.extend_from_slice(kind);
        file.extend_from_slice(data);
        let crc = crc32(&file[start..]);
        file.extend(crc.to_be_bytes());
    }
    file
}

/// zlib's checksum of the uncompressed data.
fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    b << 16 | a
}

/// The CRC-32 of PNG chunks (ISO 3309, reflected, polynomial 0xedb88320).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_known_values() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn a_png_holds_its_rows_in_stored_blocks() {
        // 200x120 RGB: 72120 bytes of filtered rows, two stored blocks.
        let rgb: Vec<u8> = (0..200 * 120 * 3).map(|i| (i % 251) as u8).collect();
        let file = encode_rgb(200, 120, &rgb);
        assert!(file.starts_with(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"));
        assert_eq!(u32::from_be_bytes(file[16..20].try_into().unwrap()), 200);
        assert_eq!(u32::from_be_bytes(file[20..24].try_into().unwrap()), 120);
        assert!(file.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]));
        // Inflate the stored blocks back and compare with the rows.
        let idat_len = u32::from_be_bytes(file[33..37].try_into().unwrap()) as usize;
        let zlib = &file[41..41 + idat_len];
        let (mut at, mut raw) = (2, Vec::new());
        loop {
            let last = zlib[at] == 1;
            let len = u16::from_le_bytes([zlib[at + 1], zlib[at + 2]]) as usize;
            assert_eq!(!u16::from_le_bytes([zlib[at + 3], zlib[at + 4]]) as usize, len);
            raw.extend_from_slice(&zlib[at + 5..at + 5 + len]);
            at += 5 + len;
            if last {
                break;
            }
        }
        assert_eq!(u32::from_be_bytes(zlib[at..at + 4].try_into().unwrap()), adler32(&raw));
        assert!(raw.chunks(601).all(|r| r[0] == 0));
        let rows: Vec<u8> = raw.chunks(601).flat_map(|r| r[1..].to_vec()).collect();
        assert_eq!(rows, rgb);
    }
}
