//! Partition tables: MBR (`block/partitions/msdos.c`, with the extended partition's chain of
//! logical partitions) and GPT (`block/partitions/efi.c`: header and entry-array CRC32, the
//! backup header when the primary is bad). Pure functions over a sector reader, so hostile
//! tables are tested without a disk: a partition past the end of the disk is dropped, one
//! that runs past it is cut, a chain of extended boot records is followed at most
//! [`MAX_EBR`] links, and only numbers below the disk's minors are kept.

/// One partition: number (1-based, as in `/dev/ubda1`), first sector and length in sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub number: u32,
    pub start: u64,
    pub sectors: u64,
}

/// Most extended boot records followed (a loop in the chain ends here).
const MAX_EBR: usize = 128;

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from(le32(b, at)) | u64::from(le32(b, at + 4)) << 32
}

/// CRC32 (IEEE, reflected, as `efi_crc32`).
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Reads 512-byte sector `lba` into the buffer; false past the end or on an I/O error.
pub type Reader<'a> = &'a dyn Fn(u64, &mut [u8]) -> bool;

fn is_extended(t: u8) -> bool {
    matches!(t, 0x05 | 0x0f | 0x85)
}

/// Adds `p` if it fits the disk (`put_partition` after msdos.c/efi.c's checks).
fn push(out: &mut Vec<Part>, p: Part, disk_sectors: u64, max: u32) {
    if p.number == 0 || p.number >= max || p.sectors == 0 || p.start >= disk_sectors {
        return;
    }
    let sectors = p.sectors.min(disk_sectors - p.start);
    out.push(Part { sectors, ..p });
}

/// The partitions of a disk of `disk_sectors` sectors whose partition numbers must be below
/// `max` (its minors). Empty when there is no table.
pub fn scan(read: Reader<'_>, disk_sectors: u64, max: u32) -> Vec<Part> {
    let mut mbr = [0u8; 512];
    if !read(0, &mut mbr) || mbr[510] != 0x55 || mbr[511] != 0xaa {
        return Vec::new();
    }
    let entry = |i: usize| &mbr[446 + 16 * i..446 + 16 * (i + 1)];
    // A protective MBR (type 0xEE) means GPT (efi.c `is_pmbr_valid`).
    if (0..4).any(|i| entry(i)[4] == 0xee)
        && let Some(parts) = gpt(read, disk_sectors, max)
    {
        return parts;
    }
    // msdos.c refuses a boot sector whose status bytes are neither 0 nor 0x80 (a FAT boot
    // sector ends in 55 AA too).
    if (0..4).any(|i| entry(i)[0] & 0x7f != 0) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut ext = None;
    for i in 0..4 {
        let e = entry(i);
        let (t, start, len) = (e[4], u64::from(le32(e, 8)), u64::from(le32(e, 12)));
        if t == 0 || len == 0 {
            continue;
        }
        if is_extended(t) {
            // The extended partition itself: 2 sectors, so nothing mistakes it for space.
            push(
                &mut out,
                Part {
                    number: i as u32 + 1,
                    start,
                    sectors: len.min(2),
                },
                disk_sectors,
                max,
            );
            ext.get_or_insert(start);
        } else {
            push(
                &mut out,
                Part {
                    number: i as u32 + 1,
                    start,
                    sectors: len,
                },
                disk_sectors,
                max,
            );
        }
    }
    if let Some(ext_start) = ext {
        let mut next = 5;
        let mut ebr_at = ext_start;
        let mut buf = [0u8; 512];
        for _ in 0..MAX_EBR {
            if !read(ebr_at, &mut buf) || buf[510] != 0x55 || buf[511] != 0xaa {
                break;
            }
            let (l, n) = (&buf[446..462], &buf[462..478]);
            if l[4] != 0 && le32(l, 12) != 0 && !is_extended(l[4]) {
                push(
                    &mut out,
                    Part {
                        number: next,
                        start: ebr_at + u64::from(le32(l, 8)),
                        sectors: u64::from(le32(l, 12)),
                    },
                    disk_sectors,
                    max,
                );
                next += 1;
            }
            if !is_extended(n[4]) || le32(n, 12) == 0 {
                break;
            }
            let to = ext_start + u64::from(le32(n, 8));
            if to == ebr_at {
                break;
            }
            ebr_at = to;
        }
    }
    out
}

/// The GPT at `lba`, if its header and entries check out (efi.c `is_gpt_valid`).
fn gpt_at(read: Reader<'_>, lba: u64, disk_sectors: u64, max: u32) -> Option<Vec<Part>> {
    let mut h = [0u8; 512];
    if !read(lba, &mut h) || &h[0..8] != b"EFI PART" {
        return None;
    }
    let hsize = le32(&h, 12) as usize;
    if !(92..=512).contains(&hsize) {
        return None;
    }
    let mut hc = h[..hsize].to_vec();
    hc[16..20].fill(0);
    if crc32(&hc) != le32(&h, 16) || le64(&h, 24) != lba {
        return None;
    }
    let (first, last) = (le64(&h, 40), le64(&h, 48));
    let (entries_lba, n, esize) = (le64(&h, 72), le32(&h, 80) as u64, le32(&h, 84) as u64);
    if last >= disk_sectors || first > last || !(128..=4096).contains(&esize) || n > 4096 {
        return None;
    }
    let bytes = n * esize;
    let mut arr = vec![0u8; bytes.div_ceil(512) as usize * 512];
    for (i, s) in arr.chunks_mut(512).enumerate() {
        if !read(entries_lba + i as u64, s) {
            return None;
        }
    }
    if crc32(&arr[..bytes as usize]) != le32(&h, 88) {
        return None;
    }
    let mut out = Vec::new();
    for i in 0..n as usize {
        let e = &arr[i * esize as usize..];
        if e[..16].iter().all(|&b| b == 0) {
            continue;
        }
        let (s, l) = (le64(e, 32), le64(e, 40));
        if s < first || l < s || l > last {
            continue;
        }
        push(
            &mut out,
            Part {
                number: i as u32 + 1,
                start: s,
                sectors: l - s + 1,
            },
            disk_sectors,
            max,
        );
    }
    Some(out)
}

fn gpt(read: Reader<'_>, disk_sectors: u64, max: u32) -> Option<Vec<Part>> {
    if disk_sectors < 3 {
        return None;
    }
    gpt_at(read, 1, disk_sectors, max).or_else(|| gpt_at(read, disk_sectors - 1, disk_sectors, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(sectors: usize) -> Vec<u8> {
        vec![0u8; sectors * 512]
    }

    fn reader(d: &[u8]) -> impl Fn(u64, &mut [u8]) -> bool + '_ {
        move |lba, buf| {
            let at = lba as usize * 512;
            if at + 512 > d.len() {
                return false;
            }
            buf[..512].copy_from_slice(&d[at..at + 512]);
            true
        }
    }

    fn mbr_entry(d: &mut [u8], base: usize, i: usize, t: u8, start: u32, len: u32) {
        let e = &mut d[base + 446 + 16 * i..base + 462 + 16 * i];
        e[4] = t;
        e[8..12].copy_from_slice(&start.to_le_bytes());
        e[12..16].copy_from_slice(&len.to_le_bytes());
        d[base + 510] = 0x55;
        d[base + 511] = 0xaa;
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn mbr_primary_extended_logical() {
        let mut d = disk(4096);
        mbr_entry(&mut d, 0, 0, 0x83, 2048, 1000);
        mbr_entry(&mut d, 0, 1, 0x05, 3072, 1000);
        // EBR at 3072: a logical at +10 (len 100), next EBR at ext+200.
        mbr_entry(&mut d, 3072 * 512, 0, 0x83, 10, 100);
        mbr_entry(&mut d, 3072 * 512, 1, 0x05, 200, 300);
        // Second EBR at 3272: one logical, its link points back at itself (a loop).
        mbr_entry(&mut d, 3272 * 512, 0, 0x83, 5, 50);
        mbr_entry(&mut d, 3272 * 512, 1, 0x05, 200, 300);
        let p = scan(&reader(&d), 4096, 16);
        assert_eq!(
            p,
            vec![
                Part {
                    number: 1,
                    start: 2048,
                    sectors: 1000
                },
                Part {
                    number: 2,
                    start: 3072,
                    sectors: 2
                },
                Part {
                    number: 5,
                    start: 3082,
                    sectors: 100
                },
                Part {
                    number: 6,
                    start: 3277,
                    sectors: 50
                },
            ]
        );
    }

    #[test]
    fn hostile_mbr_is_cut_to_the_disk() {
        let mut d = disk(100);
        mbr_entry(&mut d, 0, 0, 0x83, 50, 0xffff_ffff);
        mbr_entry(&mut d, 0, 1, 0x83, 5000, 10);
        let p = scan(&reader(&d), 100, 16);
        assert_eq!(
            p,
            vec![Part {
                number: 1,
                start: 50,
                sectors: 50
            }]
        );
        // No signature: no table.
        assert!(scan(&reader(&disk(10)), 10, 16).is_empty());
    }

    fn put_gpt(d: &mut [u8], sectors: u64, parts: &[(u64, u64)]) {
        mbr_entry(d, 0, 0, 0xee, 1, (sectors - 1) as u32);
        let mut arr = vec![0u8; 128 * 128];
        for (i, &(s, l)) in parts.iter().enumerate() {
            let e = &mut arr[i * 128..];
            e[0] = 0xaf; // any non-zero type GUID
            e[32..40].copy_from_slice(&s.to_le_bytes());
            e[40..48].copy_from_slice(&l.to_le_bytes());
        }
        d[2 * 512..2 * 512 + arr.len()].copy_from_slice(&arr);
        let h = &mut d[512..1024];
        h[0..8].copy_from_slice(b"EFI PART");
        h[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
        h[12..16].copy_from_slice(&92u32.to_le_bytes());
        h[24..32].copy_from_slice(&1u64.to_le_bytes());
        h[32..40].copy_from_slice(&(sectors - 1).to_le_bytes());
        h[40..48].copy_from_slice(&34u64.to_le_bytes());
        h[48..56].copy_from_slice(&(sectors - 34).to_le_bytes());
        h[72..80].copy_from_slice(&2u64.to_le_bytes());
        h[80..84].copy_from_slice(&128u32.to_le_bytes());
        h[84..88].copy_from_slice(&128u32.to_le_bytes());
        h[88..92].copy_from_slice(&crc32(&arr).to_le_bytes());
        let c = crc32(&h[..92]);
        h[16..20].copy_from_slice(&c.to_le_bytes());
    }

    #[test]
    fn gpt_entries_and_crc() {
        let mut d = disk(8192);
        put_gpt(&mut d, 8192, &[(2048, 4095), (4096, 8000)]);
        let p = scan(&reader(&d), 8192, 16);
        assert_eq!(
            p,
            vec![
                Part {
                    number: 1,
                    start: 2048,
                    sectors: 2048
                },
                Part {
                    number: 2,
                    start: 4096,
                    sectors: 3905
                },
            ]
        );
        // A corrupt entry array fails the CRC: no primary; no backup either, so the MBR view
        // (the protective partition) is what remains.
        d[2 * 512 + 40] ^= 1;
        let p = scan(&reader(&d), 8192, 16);
        assert_eq!(
            p,
            vec![Part {
                number: 1,
                start: 1,
                sectors: 8191
            }]
        );
    }
}
