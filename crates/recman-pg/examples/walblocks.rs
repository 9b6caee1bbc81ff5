//! Prints the block references recman decodes from WAL segment files, one per line as
//! `lsn-less spc/db/rel fork block`, for comparing with pg_waldump's --bkp-details.
fn main() {
    for path in std::env::args().skip(1) {
        let data = std::fs::read(&path).expect("read segment");
        let name = std::path::Path::new(&path)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let log = u64::from_str_radix(&name[8..16], 16).unwrap();
        let seg = u64::from_str_radix(&name[16..24], 16).unwrap();
        let seg_lsn = (log << 32) + seg * data.len() as u64;
        let cov = recman_pg::walrecord::decode_segment(&data, seg_lsn, &mut |c| println!("{c:?}"))
            .expect("decode");
        eprintln!("{name}: {cov:?}");
    }
}
