//! A batch of small fits on the device: the columns cross once, each fit's table is made
//! there by the tables' kernel, and the batch kernel reads it where it lies. Its report is
//! written whole by the kernel, so nothing of it is uploaded first.

use super::abi::{KernelArg, Launch};
use super::driver::Buffer;
use super::launcher::{Launcher, Outputs, slice};
use crate::backend::launch::{BatchColumns, LaunchConfig, RawArg};
use crate::error::BackendError;
use gpu_kernels::lm::batch::BATCH_TABLE;
use gpu_kernels::raw::RawKernel;

impl Launcher {
    /// Makes the tables of `columns` on the device, then launches `kernel`, a batch kernel,
    /// on them with `config`: its table and offsets, then `args`; copies its outputs back and
    /// waits. Arguments were checked against the kernel's parameters by the caller.
    pub fn launch_batch(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        columns: BatchColumns<'_>,
        args: &mut [RawArg<'_>],
    ) -> Result<(), BackendError> {
        let inputs = (columns.table_inputs().into_iter())
            .map(|(what, values)| self.upload_some(what, values))
            .collect::<Result<Vec<_>, _>>()?;
        let table = match columns.table_len() {
            0 => None,
            len => Some(self.alloc("a batch's tables", len)?),
        };
        let pack = (inputs.iter().chain([&table]).map(slice))
            .chain([KernelArg::U64(columns.predictors as u64)])
            .collect();
        let pack = Launch::raw(&BATCH_TABLE, pack).ok_or_else(|| BackendError::Kernel {
            kernel: BATCH_TABLE.name.to_owned(),
            reason: "was given arguments that do not match its parameters".to_owned(),
        })?;
        self.launch(&pack, columns.table_config())?;
        let leading = vec![slice(&table), slice(&inputs[BatchColumns::OFFSETS])];
        self.launch_raw_after(kernel, config, leading, args, Outputs::Written)
    }

    /// A device copy of `values`; none for none.
    fn upload_some(
        &self,
        what: &'static str,
        values: &[f64],
    ) -> Result<Option<Buffer>, BackendError> {
        match values.is_empty() {
            true => Ok(None),
            false => self.upload(what, values).map(Some),
        }
    }
}
