//! The code-object checks on what clang and rustc really write: the device runtime's amdgcn
//! objects from `cargo xtask build` (`target/dist/device/amdgcn/<gfx>/device_rtl.o`).

use amdgpu_hsa::code_object::{target_id, Feature, TargetId};

#[test]
fn built_objects_carry_their_processor_and_any_features() {
    for gfx in ["gfx90a", "gfx942", "gfx1100"] {
        let path = plugin_test_support::dist(&format!("device/amdgcn/{gfx}/device_rtl.o"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let id = target_id(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(id.processor, gfx);
        // gfx1100 has no xnack/sramecc; the others leave both to the agent.
        let expected = if gfx == "gfx1100" { Feature::Unsupported } else { Feature::Any };
        assert_eq!((id.xnack, id.sramecc), (expected, expected), "{gfx}");
        let agent = TargetId::from_isa_name(&format!("amdgcn-amd-amdhsa--{gfx}:sramecc+:xnack-")).unwrap();
        assert_eq!(id.check_runs_on(&agent), Ok(()));
        let other = TargetId::from_isa_name("amdgcn-amd-amdhsa--gfx908").unwrap();
        assert!(id.check_runs_on(&other).unwrap_err().contains("the agent is gfx908"));
    }
}
