//! Shared memory: a block's `.shared` arrays ([`SharedArray`]), declared by
//! [`shared_array!`](crate::shared_array). GPU-only.

/// A `.shared` array of `N` f64, one per block. Made by [`shared_array!`](crate::shared_array).
/// Reads and writes are volatile, so they are not cached across [`sync`](crate::raw::Block::sync).
#[derive(Clone, Copy)]
pub struct SharedArray<const N: usize> {
    ptr: *mut f64,
}

impl<const N: usize> SharedArray<N> {
    /// # Safety
    /// `address` must be the generic address of a `.shared` array of `N` f64.
    #[doc(hidden)]
    pub unsafe fn from_generic(address: u64) -> Self {
        SharedArray {
            ptr: address as *mut f64,
        }
    }

    /// The array's first element, for the crate's own views of it.
    pub(crate) fn as_ptr(&self) -> *const f64 {
        self.ptr
    }

    /// Element `i` (a volatile read).
    pub fn get(&self, i: usize) -> f64 {
        assert!(i < N);
        // SAFETY: in bounds of the block's array.
        unsafe { self.ptr.add(i).read_volatile() }
    }

    /// Writes `value` to element `i` (a volatile write); the block's other threads see it
    /// after a [`sync`](crate::raw::Block::sync).
    pub fn set(&self, i: usize, value: f64) {
        assert!(i < N);
        // SAFETY: in bounds of the block's array.
        unsafe { self.ptr.add(i).write_volatile(value) }
    }
}

/// Declares a `.shared` array of `LEN` f64 named `SYMBOL` (unique in the module) and returns a
/// [`SharedArray`] for it. GPU-only, like the block kernels that use it. (`.shared` statics
/// cannot be Rust statics: a `link_section` lands in global memory; so the array is declared
/// in module-level PTX and addressed with `cvta.shared`.)
#[macro_export]
// Declares the array with inline PTX, in the caller's crate: this crate's plumbing.
#[cfg_attr(
    target_arch = "nvptx64",
    allow_internal_unstable(asm_experimental_arch),
    allow_internal_unsafe
)]
macro_rules! shared_array {
    ($symbol:ident, $len:literal) => {{
        ::core::arch::global_asm!(concat!(
            ".shared .align 8 .f64 ", stringify!($symbol), "[", stringify!($len), "];"
        ));
        let address: u64;
        // SAFETY: takes the address of the array declared above; touches no memory.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {a}, ", stringify!($symbol), ";"),
                a = out(reg64) address,
            )
        };
        // SAFETY: `address` is that of a `.shared` array of `$len` f64.
        unsafe { $crate::device::SharedArray::<$len>::from_generic(address) }
    }};
}
