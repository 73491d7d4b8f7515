//! AMDGPU code objects and target IDs: which image may be loaded on which agent.
//!
//! An image's processor is `e_flags & EF_AMDGPU_MACH`; its target-ID features (code object v4+)
//! are the `EF_AMDGPU_FEATURE_XNACK_V4` / `SRAMECC_V4` fields. An HSA agent names its ISA as
//! `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`. LLVM's rule (`isImageCompatibleWithEnv`): same
//! processor, and each feature of the image either `any` or equal to the agent's setting.

use std::fmt;

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_ABIVERSION` of code objects v4, v5, v6 (`ELFABIVERSION_AMDGPU_HSA_V4..V6`): the versions
/// with target-ID feature fields, what clang 16-19 write.
pub const ABI_VERSIONS: std::ops::RangeInclusive<u8> = 2..=4;
/// `EF_AMDGPU_MACH`: the processor field of `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// `EF_AMDGPU_FEATURE_XNACK_V4`: the xnack field of `e_flags`.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `EF_AMDGPU_FEATURE_SRAMECC_V4`: the sramecc field of `e_flags`.
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;

/// `EF_AMDGPU_MACH_AMDGCN_*` values (llvm/BinaryFormat/ELF.h; each checked against
/// `llvm-readelf-19 -h` of a header carrying it). Generic targets are not listed: LLVM 19's
/// runtime does not load them either.
const MACHS: &[(&str, u32)] = &[
    ("gfx600", 0x020),
    ("gfx601", 0x021),
    ("gfx700", 0x022),
    ("gfx701", 0x023),
    ("gfx702", 0x024),
    ("gfx703", 0x025),
    ("gfx704", 0x026),
    ("gfx801", 0x028),
    ("gfx802", 0x029),
    ("gfx803", 0x02a),
    ("gfx810", 0x02b),
    ("gfx900", 0x02c),
    ("gfx902", 0x02d),
    ("gfx904", 0x02e),
    ("gfx906", 0x02f),
    ("gfx908", 0x030),
    ("gfx909", 0x031),
    ("gfx90c", 0x032),
    ("gfx1010", 0x033),
    ("gfx1011", 0x034),
    ("gfx1012", 0x035),
    ("gfx1030", 0x036),
    ("gfx1031", 0x037),
    ("gfx1032", 0x038),
    ("gfx1033", 0x039),
    ("gfx602", 0x03a),
    ("gfx705", 0x03b),
    ("gfx805", 0x03c),
    ("gfx1035", 0x03d),
    ("gfx1034", 0x03e),
    ("gfx90a", 0x03f),
    ("gfx940", 0x040),
    ("gfx1100", 0x041),
    ("gfx1013", 0x042),
    ("gfx1150", 0x043),
    ("gfx1103", 0x044),
    ("gfx1036", 0x045),
    ("gfx1101", 0x046),
    ("gfx1102", 0x047),
    ("gfx1200", 0x048),
    ("gfx1151", 0x04a),
    ("gfx941", 0x04b),
    ("gfx942", 0x04c),
    ("gfx1201", 0x04e),
    ("gfx1152", 0x055),
];

/// The processor name of an `EF_AMDGPU_MACH` value.
pub fn processor_of_mach(mach: u32) -> Option<&'static str> {
    MACHS.iter().find(|&&(_, m)| m == mach).map(|&(name, _)| name)
}

/// Every processor name this module knows, in `EF_AMDGPU_MACH` table order.
pub fn processors() -> impl Iterator<Item = &'static str> {
    MACHS.iter().map(|&(name, _)| name)
}

/// The `EF_AMDGPU_MACH` value of a processor name.
pub fn mach_of_processor(name: &str) -> Option<u32> {
    MACHS.iter().find(|&&(n, _)| n == name).map(|&(_, m)| m)
}

/// A target-ID feature setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// The processor has no such feature.
    Unsupported,
    /// Code works either way (the image's default).
    Any,
    /// Compiled for, or running with, the feature off (`feature-`).
    Off,
    /// Compiled for, or running with, the feature on (`feature+`).
    On,
}

impl Feature {
    /// Decodes a v4 feature field (`UNSUPPORTED 0, ANY 1, OFF 2, ON 3`, shifted into place).
    fn from_field(flags: u32, mask: u32) -> Feature {
        match (flags & mask) >> mask.trailing_zeros() {
            0 => Feature::Unsupported,
            1 => Feature::Any,
            2 => Feature::Off,
            _ => Feature::On,
        }
    }

    /// Whether code built with `self` runs where the feature is `agent`.
    fn runs_with(self, agent: Feature) -> bool {
        match self {
            Feature::Any | Feature::Unsupported => true,
            Feature::On | Feature::Off => self == agent,
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Feature::Unsupported => "unsupported",
            Feature::Any => "any",
            Feature::Off => "off",
            Feature::On => "on",
        })
    }
}

/// A processor and its xnack / sramecc settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetId {
    /// `gfxNNN`.
    pub processor: String,
    /// xnack.
    pub xnack: Feature,
    /// sramecc.
    pub sramecc: Feature,
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        for (name, feature) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            match feature {
                Feature::On => write!(f, ":{name}+")?,
                Feature::Off => write!(f, ":{name}-")?,
                Feature::Any | Feature::Unsupported => {}
            }
        }
        Ok(())
    }
}

impl TargetId {
    /// Parses an HSA agent ISA name, `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-` (the features
    /// the agent does not name are `Any`: HSA names both for processors that have them).
    pub fn from_isa_name(name: &str) -> Option<TargetId> {
        let id = name.strip_prefix("amdgcn-amd-amdhsa--")?;
        let mut parts = id.split(':');
        let processor = parts.next()?.to_string();
        mach_of_processor(&processor)?;
        let (mut xnack, mut sramecc) = (Feature::Any, Feature::Any);
        for part in parts {
            let (feature, setting) = part.split_at(part.len().checked_sub(1)?);
            let setting = match setting {
                "+" => Feature::On,
                "-" => Feature::Off,
                _ => return None,
            };
            match feature {
                "xnack" => xnack = setting,
                "sramecc" => sramecc = setting,
                _ => return None,
            }
        }
        Some(TargetId { processor, xnack, sramecc })
    }

    /// Whether an image built for `self` may be loaded on an agent that is `agent`, and if not,
    /// why.
    pub fn check_runs_on(&self, agent: &TargetId) -> Result<(), String> {
        if self.processor != agent.processor {
            return Err(format!("built for {}, the agent is {}", self.processor, agent.processor));
        }
        for (name, image, on_agent) in
            [("xnack", self.xnack, agent.xnack), ("sramecc", self.sramecc, agent.sramecc)]
        {
            if !image.runs_with(on_agent) {
                return Err(format!("built with {name} {image}, the agent runs with {name} {on_agent}"));
            }
        }
        Ok(())
    }
}

/// Why bytes are not a loadable AMDGPU code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotACodeObject(pub String);

impl fmt::Display for NotACodeObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads the target ID of an AMDGPU HSA code object (v4 to v6) from its ELF header.
pub fn target_id(image: &[u8]) -> Result<TargetId, NotACodeObject> {
    use object::read::elf::FileHeader as _;
    let bad = |why: String| Err(NotACodeObject(why));
    if !image.starts_with(b"\x7fELF") {
        return bad("not an ELF file".into());
    }
    if image.len() < 6 || image[4] != object::elf::ELFCLASS64 || image[5] != object::elf::ELFDATA2LSB {
        return bad("not a 64-bit little-endian ELF file".into());
    }
    let e = object::LittleEndian;
    let Ok(header) = object::elf::FileHeader64::<object::LittleEndian>::parse(image) else {
        return bad("a truncated ELF header".into());
    };
    let machine = header.e_machine(e);
    if machine != EM_AMDGPU {
        return bad(format!("e_machine {machine}, not EM_AMDGPU ({EM_AMDGPU})"));
    }
    let ident = header.e_ident();
    if ident.os_abi != ELFOSABI_AMDGPU_HSA {
        return bad(format!("OS/ABI {}, not AMDGPU HSA ({ELFOSABI_AMDGPU_HSA})", ident.os_abi));
    }
    if !ABI_VERSIONS.contains(&ident.abi_version) {
        return bad(format!(
            "ABI version {} (code object v{}): only v4 to v6 are loaded",
            ident.abi_version,
            ident.abi_version + 2
        ));
    }
    let flags = header.e_flags(e);
    let mach = flags & EF_AMDGPU_MACH;
    let Some(processor) = processor_of_mach(mach) else {
        return bad(format!("unknown processor EF_AMDGPU_MACH {mach:#x}"));
    };
    Ok(TargetId {
        processor: processor.to_string(),
        xnack: Feature::from_field(flags, EF_AMDGPU_FEATURE_XNACK_V4),
        sramecc: Feature::from_field(flags, EF_AMDGPU_FEATURE_SRAMECC_V4),
    })
}

/// The code object version (4 to 6) of an AMDGPU HSA code object, checked as [`target_id`]
/// checks it. v5 and later kernels take the implicit arguments of [`crate::dispatch`].
pub fn code_object_version(image: &[u8]) -> Result<u8, NotACodeObject> {
    target_id(image)?;
    Ok(image[8] + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-byte ELF header as clang writes for AMDGPU, with `flags`.
    fn header(flags: u32) -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[..4].copy_from_slice(b"\x7fELF");
        e[4] = 2;
        e[5] = 1;
        e[6] = 1;
        e[7] = ELFOSABI_AMDGPU_HSA;
        e[8] = 3;
        e[16] = 3; // ET_DYN
        e[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        e[48..52].copy_from_slice(&flags.to_le_bytes());
        e
    }

    fn isa(name: &str) -> TargetId {
        TargetId::from_isa_name(name).unwrap()
    }

    #[test]
    fn reads_clang_19_flags() {
        // 0x53f: what clang 19 writes for --offload-arch=gfx90a (llvm-readelf: gfx90a, xnack, sramecc).
        let id = target_id(&header(0x53f)).unwrap();
        assert_eq!(id, TargetId { processor: "gfx90a".into(), xnack: Feature::Any, sramecc: Feature::Any });
        assert_eq!(target_id(&header(0x41)).unwrap().xnack, Feature::Unsupported);
        assert_eq!(code_object_version(&header(0x53f)), Ok(5));
        let on = target_id(&header(0x03f | 0x300 | 0x800)).unwrap();
        assert_eq!((on.xnack, on.sramecc), (Feature::On, Feature::Off));
        assert_eq!(on.to_string(), "gfx90a:sramecc-:xnack+");
    }

    #[test]
    fn rejects_what_is_not_an_amdgpu_code_object_with_a_reason() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"not an elf".to_vec(), "not an ELF"),
            (
                {
                    let mut e = header(0x3f);
                    e[4] = 1;
                    e
                },
                "64-bit",
            ),
            (
                {
                    let mut e = header(0x3f);
                    e[18] = 190;
                    e
                },
                "EM_AMDGPU",
            ),
            (
                {
                    let mut e = header(0x3f);
                    e[7] = 0;
                    e
                },
                "OS/ABI",
            ),
            (
                {
                    let mut e = header(0x3f);
                    e[8] = 1;
                    e
                },
                "code object v3",
            ),
            (header(0x027), "unknown processor"),
            (header(0x051), "unknown processor"), // gfx9-generic
        ];
        for (bytes, why) in cases {
            let err = target_id(&bytes).unwrap_err();
            assert!(err.0.contains(why), "{err} should say {why}");
        }
    }

    #[test]
    fn agent_isa_names_parse() {
        let agent = isa("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
        assert_eq!((agent.sramecc, agent.xnack), (Feature::On, Feature::Off));
        assert_eq!(isa("amdgcn-amd-amdhsa--gfx1100").xnack, Feature::Any);
        for bad in [
            "gfx90a",
            "amdgcn-amd-amdhsa--gfx90a:xnack",
            "amdgcn-amd-amdhsa--gfx90a:tgsplit+",
            "amdgcn-amd-amdhsa--gfx123",
        ] {
            assert_eq!(TargetId::from_isa_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn compatibility_follows_llvm() {
        let agent = isa("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
        let image = |flags| target_id(&header(flags)).unwrap();
        assert_eq!(image(0x53f).check_runs_on(&agent), Ok(()), "any/any runs everywhere");
        assert_eq!(image(0x03f | 0x200 | 0xc00).check_runs_on(&agent), Ok(()), "xnack-, sramecc+ match");
        let err = image(0x03f | 0x300 | 0x400).check_runs_on(&agent).unwrap_err();
        assert_eq!(err, "built with xnack on, the agent runs with xnack off");
        let err = image(0x54c).check_runs_on(&agent).unwrap_err();
        assert_eq!(err, "built for gfx942, the agent is gfx90a");
    }

    #[test]
    fn mach_table_round_trips() {
        for &(name, mach) in MACHS {
            assert_eq!(processor_of_mach(mach), Some(name));
            assert_eq!(mach_of_processor(name), Some(mach));
        }
    }
}
